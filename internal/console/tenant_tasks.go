package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The tenant console's task list (GET /console/): the key's own video tasks, newest first,
// filtered and paged by cursor, and on a second tab (?kind=speech) its speech records.

// tenantReads is what the task pages read of the store besides the video service; the SQL
// store has all of it (TenantStore stays the small interface every tenant page needs).
type tenantReads interface {
	SearchTasks(ctx context.Context, f store.TaskFilter) ([]store.Task, error)
	SearchSpeeches(ctx context.Context, f store.SpeechFilter) ([]store.Speech, error)
	TaskEvents(ctx context.Context, taskID string) ([]store.TaskEvent, error)
	SpeechEvents(ctx context.Context, speechID string) ([]store.TaskEvent, error)
	Speech(ctx context.Context, id string) (store.Speech, error)
}

func (t *Tenant) reads() (tenantReads, error) {
	r, ok := t.cfg.Store.(tenantReads)
	if !ok {
		return nil, errors.New("console: the store cannot search tasks")
	}
	return r, nil
}

// taskFilters is the list's filter form: the values as typed, and their errors.
type taskFilters struct {
	Kind                 string // "" (video tasks) or "speech"
	Status, Route, Alias string
	From, To             string // YYYY-MM-DD, UTC days, both inclusive
	Errors               map[string]string
	from, to             time.Time
}

// Err is the message for a field ("" when it is fine).
func (f taskFilters) Err(field string) string { return f.Errors[field] }

// Speech reports whether the speech tab is shown.
func (f taskFilters) Speech() bool { return f.Kind == "speech" }

// Any reports whether a filter is set.
func (f taskFilters) Any() bool {
	return f.Status != "" || f.Route != "" || f.Alias != "" || f.From != "" || f.To != ""
}

// query is the filters as a query string, for the next page's link.
func (f taskFilters) query() url.Values {
	q := url.Values{}
	for _, kv := range [][2]string{{"kind", f.Kind}, {"status", f.Status}, {"route", f.Route}, {"alias", f.Alias}, {"from", f.From}, {"to", f.To}} {
		if kv[1] != "" {
			q.Set(kv[0], kv[1])
		}
	}
	return q
}

// option is one choice of a filter's select.
type option struct {
	Value, Label string
	Selected     bool
}

// Task statuses and routes the filters offer.
var (
	taskStatuses   = []string{store.StatusQueued, store.StatusInProgress, store.StatusCompleted, store.StatusFailed, store.StatusExpired}
	speechStatuses = []string{store.SpeechPending, store.SpeechCompleted, store.SpeechFailed}
	taskRoutes     = []string{"native", "production", "enhancement"}
)

func options(values []string, selected string) []option {
	out := []option{{Value: "", Label: "Any", Selected: selected == ""}}
	for _, v := range values {
		out = append(out, option{Value: v, Label: v, Selected: v == selected})
	}
	return out
}

// tasksPage is the data of tenant_tasks.html.
type tasksPage struct {
	Filters  taskFilters
	Statuses []option
	Routes   []option
	Aliases  []option
	Tasks    []taskRow
	Speeches []speechRow
	Next     string // the next page's URL, "" on the last page
	Currency string
	// HooksDown are the account's webhook endpoints disabled by their run of failed
	// deliveries: the overview's notice, linking to the Webhooks page.
	HooksDown []endpointRow
}

// taskRow is one task of the list.
type taskRow struct {
	store.Task
}

// Settled reports whether the task's cost is final (what it was charged).
func (r taskRow) Settled() bool { return store.Terminal(r.Status) }

// Cost is what the task was charged once settled, else what is reserved for it.
func (r taskRow) Cost() money.Micros {
	if r.Settled() {
		return r.Charged
	}
	return r.Reserved
}

// speechRow is one speech record of the list.
type speechRow struct {
	store.Speech
}

// Settled reports whether the record's cost is final.
func (r speechRow) Settled() bool { return r.Status != store.SpeechPending }

// Cost is what the record was charged once settled, else what is reserved for it.
func (r speechRow) Cost() money.Micros {
	if r.Settled() {
		return r.Charged
	}
	return r.Reserved
}

// parseFilters reads the list's query; a bad value is an error next to its field.
func (t *Tenant) parseFilters(r *http.Request, s *Session) taskFilters {
	q := r.URL.Query()
	f := taskFilters{Kind: q.Get("kind"), Status: q.Get("status"), Route: q.Get("route"), Alias: q.Get("alias"),
		From: q.Get("from"), To: q.Get("to"), Errors: map[string]string{}}
	if f.Kind != "speech" {
		f.Kind = ""
	}
	statuses := taskStatuses
	if f.Speech() {
		statuses = speechStatuses
		f.Route = ""
	}
	if f.Status != "" && !contains(statuses, f.Status) {
		f.Errors["status"] = "Choose a status from the list."
	}
	if f.Route != "" && !contains(taskRoutes, f.Route) {
		f.Errors["route"] = "Choose a route from the list."
	}
	if f.Alias != "" {
		if _, ok := s.Caller.Tenant.Alias(f.Alias); !ok {
			f.Errors["alias"] = "This account has no model alias named like that."
		}
	}
	for _, d := range []struct {
		name, v string
		to      *time.Time
	}{{"from", f.From, &f.from}, {"to", f.To, &f.to}} {
		if d.v == "" {
			continue
		}
		day, err := time.Parse(time.DateOnly, d.v)
		if err != nil || day.Year() < 1970 || day.Year() > 9999 {
			f.Errors[d.name] = "Give a date as YYYY-MM-DD."
			continue
		}
		*d.to = day
	}
	if !f.from.IsZero() && !f.to.IsZero() && f.to.Before(f.from) {
		f.Errors["to"] = "The end date is before the start date."
	}
	return f
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// tasks is GET /console/: the key's tasks (or speech records), newest first.
func (t *Tenant) tasks(w http.ResponseWriter, r *http.Request, s *Session) error {
	f := t.parseFilters(r, s)
	p := tasksPage{Filters: f, Statuses: options(taskStatuses, f.Status), Routes: options(taskRoutes, f.Route),
		Currency: s.Caller.Tenant.Currency}
	if f.Speech() {
		p.Statuses = options(speechStatuses, f.Status)
	}
	if hooks, err := t.webhooksOn(s); err == nil {
		eps, err := loadEndpoints(r.Context(), hooks, s.Caller.Key.TenantID)
		if err != nil {
			return err
		}
		p.HooksDown = webhooksPage{Endpoints: eps}.AutoDisabled()
	}
	var aliases []string
	for _, a := range s.Caller.Tenant.Aliases {
		if (a.Product == catalog.ProductSpeech) == f.Speech() {
			aliases = append(aliases, a.Name)
		}
	}
	p.Aliases = options(aliases, f.Alias)
	if len(f.Errors) > 0 {
		t.render(w, r, s, http.StatusBadRequest, "tenant_tasks", "Tasks", p)
		return nil
	}
	st, err := t.reads()
	if err != nil {
		return err
	}
	var from, to time.Time
	if !f.from.IsZero() {
		from = f.from
	}
	if !f.to.IsZero() {
		to = f.to.AddDate(0, 0, 1) // the end day is included
	}
	after := r.URL.Query().Get("after")
	page := store.Page{Limit: PageSize + 1}
	var last string
	if f.Speech() {
		if after != "" {
			sp, err := t.ownSpeech(r.Context(), s, after)
			if err != nil {
				return err
			}
			page.AfterAt, page.AfterID = sp.CreatedAt, sp.ID
		}
		recs, err := st.SearchSpeeches(r.Context(), store.SpeechFilter{KeyID: s.Caller.Key.ID, Status: f.Status, Model: f.Alias,
			CreatedFrom: from, CreatedTo: to, Page: page})
		if err != nil {
			return fmt.Errorf("console: speeches: %w", err)
		}
		more := len(recs) > PageSize
		recs = recs[:min(len(recs), PageSize)]
		for _, rec := range recs {
			p.Speeches = append(p.Speeches, speechRow{rec})
		}
		if more {
			last = recs[len(recs)-1].ID
		}
	} else {
		if after != "" {
			task, err := t.cfg.Videos.Get(r.Context(), s.Caller, after)
			if err != nil {
				return err
			}
			page.AfterAt, page.AfterID = task.CreatedAt, task.ID
		}
		tasks, err := st.SearchTasks(r.Context(), store.TaskFilter{KeyID: s.Caller.Key.ID, Status: f.Status, Model: f.Alias,
			Route: f.Route, CreatedFrom: from, CreatedTo: to, Page: page})
		if err != nil {
			return fmt.Errorf("console: tasks: %w", err)
		}
		more := len(tasks) > PageSize
		tasks = tasks[:min(len(tasks), PageSize)]
		for _, task := range tasks {
			p.Tasks = append(p.Tasks, taskRow{task})
		}
		if more {
			last = tasks[len(tasks)-1].ID
		}
	}
	if last != "" {
		q := f.query()
		q.Set("after", last)
		p.Next = "/console/?" + q.Encode()
	}
	t.Render(w, r, s, "tenant_tasks", "Tasks", p)
	return nil
}

// ownSpeech reads a speech record of the session's key; another key's, or an unknown id, is
// not found, as the task pages do.
func (t *Tenant) ownSpeech(ctx context.Context, s *Session, id string) (store.Speech, error) {
	st, err := t.reads()
	if err != nil {
		return store.Speech{}, err
	}
	notFound := apierr.New(apierr.KindNotFound, "No speech record with this id exists for this API key.")
	if !idgen.Plausible(id) {
		return store.Speech{}, notFound
	}
	sp, err := st.Speech(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sp.KeyID != s.Caller.Key.ID) {
		return store.Speech{}, notFound
	}
	if err != nil {
		return store.Speech{}, fmt.Errorf("console: speech %s: %w", id, err)
	}
	return sp, nil
}
