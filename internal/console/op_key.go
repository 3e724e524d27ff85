package console

import (
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/usage"
)

// The operator console's key page (issue 27): the key's facts, balance, caps and spend, its
// latest ledger transactions, its daily usage of the last 30 days and its recent tasks.

// KeyLedgerRows is how many of the key's latest ledger transactions the page shows.
const KeyLedgerRows = 50

type opKeyPage struct {
	Key    admin.Key
	Ledger []keyLedgerRow
	Usage  Chart
	Tasks  []admin.TaskSummary
	// MoreTasks links to the tasks search for the key when there are more than shown.
	MoreTasks string
}

// keyLedgerRow is one transaction with what it moved on each of the key's accounts.
type keyLedgerRow struct {
	admin.KeyLedgerTxn
	Available, Reserved, Spent money.Micros
}

// TaskLink is where a ledger transaction's subject is shown, if it has a page.
func (r keyLedgerRow) TaskLink() string {
	switch {
	case strings.HasPrefix(r.Ref, "video_"), strings.HasPrefix(r.Ref, "task_"):
		return "/console/tasks/" + url.PathEscape(r.Ref)
	case strings.HasPrefix(r.Ref, "speech_"):
		return "/console/speech/" + url.PathEscape(r.Ref)
	}
	return ""
}

func (o *Operator) keyPage(w http.ResponseWriter, r *http.Request, s *Session) error {
	ctx := r.Context()
	k, err := o.cfg.Admin.Key(ctx, s.Actor, r.PathValue("id"))
	if err != nil {
		return err
	}
	p := opKeyPage{Key: k}
	txns, err := o.cfg.Admin.KeyLedger(ctx, s.Actor, k.ID, KeyLedgerRows)
	if err != nil {
		return err
	}
	for _, t := range txns {
		row := keyLedgerRow{KeyLedgerTxn: t}
		for _, e := range t.Entries {
			switch e.Account {
			case store.AccountID(k.ID, store.AccountAvailable):
				row.Available += e.Amount
			case store.AccountID(k.ID, store.AccountReserved):
				row.Reserved += e.Amount
			case store.AccountID(k.ID, store.AccountSpent):
				row.Spent += e.Amount
			}
		}
		p.Ledger = append(p.Ledger, row)
	}
	now := o.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	rep, err := o.cfg.Admin.Usage(ctx, s.Actor, usage.Query{From: today.AddDate(0, 0, -29), To: today.AddDate(0, 0, 1),
		GroupBy: []string{store.UsageByDay}, Key: k.ID})
	if err != nil {
		return err
	}
	p.Usage = dailyChart(rep, today)
	tasks, err := o.cfg.Admin.SearchTasks(ctx, s.Actor, admin.SearchInput{Key: k.ID, Limit: 20})
	if err != nil {
		return err
	}
	p.Tasks = tasks.Data
	if tasks.HasMore {
		p.MoreTasks = "/console/tasks?key=" + url.QueryEscape(k.ID)
	}
	o.Render(w, r, s, "op_key", "Key "+k.Name, p)
	return nil
}

// dailyChart draws a report grouped by day as the amount charged per day of the 30 days up to
// today, one series per currency.
func dailyChart(rep usage.Report, today time.Time) Chart {
	c := Chart{ID: "usage", Title: "Charged per day, last 30 days (UTC)", RowHead: "Day",
		Format: func(v float64) string { return displayMoney(money.Micros(math.Round(v * float64(money.Scale)))) }}
	idx := map[string]int{}
	for i := 29; i >= 0; i-- {
		d := today.AddDate(0, 0, -i).Format(time.DateOnly)
		idx[d] = len(c.Labels)
		c.Labels = append(c.Labels, d)
	}
	cur := map[string]int{}
	c.Values = make([][]float64, len(c.Labels))
	for _, row := range rep.Data {
		j, ok := cur[row.Currency]
		if !ok {
			j = len(c.Series)
			cur[row.Currency] = j
			c.Series = append(c.Series, row.Currency)
		}
		i, ok := idx[row.Day]
		if !ok {
			continue
		}
		for len(c.Values[i]) <= j {
			c.Values[i] = append(c.Values[i], 0)
		}
		c.Values[i][j] += float64(row.Charged) / float64(money.Scale)
	}
	if len(c.Series) == 0 {
		c.Series = []string{"charged"}
	}
	for i := range c.Values {
		for len(c.Values[i]) < len(c.Series) {
			c.Values[i] = append(c.Values[i], 0)
		}
	}
	return c
}
