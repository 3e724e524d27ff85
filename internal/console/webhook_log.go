package console

import (
	"context"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// One endpoint's delivery log, as both consoles show it: filtered by outcome, event type,
// event id and UTC days, newest first, a page of PageSize with a cursor, each delivery with
// its attempts and a redeliver button.

// logPage is the data of the log part (parts.html, "webhooklog").
type logPage struct {
	Base         string // the endpoint's page: /console/webhooks/{id}
	EndpointName string
	EndpointID   string
	Tenant       string
	Status       string // the endpoint's
	AutoDisabled bool
	FailureRun   int
	URL          string
	Filters      logFilters
	Rows         []deliveryRow
	Next         string
	CanRedeliver bool
	Flash        string
	Problem      string
	Statuses     []string
	EventTypes   []string
}

// Enabled tells the endpoint's status.
func (p logPage) Enabled() bool { return p.Status == store.WebhookEnabled }

// logFilters is the log's filter form: the values as typed and their errors.
type logFilters struct {
	Status, EventType, EventID string
	From, To                   string // YYYY-MM-DD, UTC days, both inclusive
	Errors                     map[string]string
}

// Err is the message for a field.
func (f logFilters) Err(field string) string { return f.Errors[field] }

// Any tells whether a filter is set.
func (f logFilters) Any() bool {
	return f.Status != "" || f.EventType != "" || f.EventID != "" || f.From != "" || f.To != ""
}

// deliveryRow is one delivery of the log with its attempts.
type deliveryRow struct {
	ID, EventID, EventType, Status string
	AttemptCount                   int
	Created, Updated               time.Time
	Attempts                       []attemptRow
}

// attemptRow is one attempt.
type attemptRow struct {
	N          int
	At         time.Time
	StatusCode int
	Latency    time.Duration
	Error      string
}

// LatencyText shows the latency to the millisecond.
func (a attemptRow) LatencyText() string { return a.Latency.Round(time.Millisecond).String() }

// parseLogFilters reads the filter form into the webhook service's query; a bad field is
// kept with its message and the query is the zero one (the page shows the form's errors).
func parseLogFilters(v url.Values) (logFilters, webhook.LogQuery, bool) {
	f := logFilters{Status: v.Get("status"), EventType: v.Get("event_type"), EventID: strings.TrimSpace(v.Get("event_id")),
		From: v.Get("from"), To: v.Get("to"), Errors: map[string]string{}}
	q := url.Values{}
	for _, kv := range [][2]string{{"status", f.Status}, {"event_type", f.EventType}, {"event_id", f.EventID}, {"after", v.Get("after")}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	for _, d := range []struct {
		field, value, param string
		next                bool
	}{{"from", f.From, "since", false}, {"to", f.To, "until", true}} {
		if d.value == "" {
			continue
		}
		day, err := time.Parse(time.DateOnly, d.value)
		if err != nil {
			f.Errors[d.field] = "Give a day as YYYY-MM-DD."
			continue
		}
		if d.next {
			day = day.AddDate(0, 0, 1)
		}
		q.Set(d.param, day.Format(time.RFC3339))
	}
	if len(f.Errors) > 0 {
		return f, webhook.LogQuery{}, false
	}
	lq, err := webhook.ParseLogQuery(q)
	if err != nil {
		e := apierr.As(err)
		field := map[string]string{"since": "from", "until": "to", "after": "from"}[e.Param]
		if field == "" {
			field = e.Param
		}
		f.Errors[field] = e.Message
		return f, webhook.LogQuery{}, false
	}
	lq.Limit = PageSize
	return f, lq, true
}

// nextURL is the page after the last delivery shown, with the same filters.
func (f logFilters) nextURL(base, after string) string {
	q := url.Values{"after": {after}}
	for _, kv := range [][2]string{{"status", f.Status}, {"event_type", f.EventType}, {"event_id", f.EventID}, {"from", f.From}, {"to", f.To}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	return base + "?" + q.Encode()
}

// loadLog fills the page's rows from a page of the log and each delivery's attempts.
func loadLog(ctx context.Context, st webhook.Store, p *logPage, list webhook.DeliveryList) error {
	for _, d := range list.Data {
		as, err := st.WebhookAttempts(ctx, d.ID)
		if err != nil {
			return err
		}
		row := deliveryRow{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.AttemptCount,
			Created: time.Unix(d.CreatedAt, 0), Updated: time.Unix(d.UpdatedAt, 0)}
		for _, a := range as {
			row.Attempts = append(row.Attempts, attemptRow{N: a.N, At: a.At, StatusCode: a.StatusCode, Latency: a.Latency, Error: a.Error})
		}
		p.Rows = append(p.Rows, row)
	}
	if list.HasMore {
		p.Next = p.Filters.nextURL(p.Base, list.LastID)
	}
	return nil
}
