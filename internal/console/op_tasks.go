package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/speech"
	"mediagen/internal/store"
)

// The operator console's Tasks search (issue 27): the support lookup by a public id (a task,
// speech record or asset id goes straight to its page) and a search by filters, newest first,
// a page at a time (admin.Service.SearchTasks).

type opTasksPage struct {
	Filter   url.Values
	Errs     fieldErrs
	Statuses []string
	Routes   []string
	Searched bool
	Tasks    []admin.TaskSummary
	Next     string
}

// Val is a filter's value as typed.
func (p opTasksPage) Val(name string) string { return p.Filter.Get(name) }

// Err is a filter's message.
func (p opTasksPage) Err(name string) string { return p.Errs[name] }

// idPage is the console page of a public id, by its prefix ("" if it names nothing we show).
func idPage(id string) string {
	switch {
	case strings.HasPrefix(id, "video_"), strings.HasPrefix(id, "task_"):
		return "/console/tasks/" + url.PathEscape(id)
	case strings.HasPrefix(id, "speech_"):
		return "/console/speech/" + url.PathEscape(id)
	case strings.HasPrefix(id, "asset_"):
		return "/console/assets/" + url.PathEscape(id)
	}
	return ""
}

func (o *Operator) tasksSearch(w http.ResponseWriter, r *http.Request, s *Session) error {
	q := r.URL.Query()
	p := opTasksPage{Filter: q, Errs: fieldErrs{}, Statuses: []string{"queued", "in_progress", "completed", "failed", "expired"},
		Routes: []string{"native", "enhancement", "production"}}
	if id := strings.TrimSpace(q.Get("q")); id != "" {
		if to := idPage(id); to != "" {
			http.Redirect(w, r, to, http.StatusSeeOther)
			return nil
		}
		p.Errs["q"] = "Enter a task id (video_…), a speech id (speech_…) or an asset id (asset_…)."
		o.render(w, r, s, http.StatusBadRequest, "op_tasks", "Tasks", p)
		return nil
	}
	in := admin.SearchInput{Tenant: q.Get("tenant"), Key: q.Get("key"), Status: q.Get("status"), Alias: q.Get("alias"),
		Route: q.Get("route"), UpstreamJob: q.Get("upstream_job"), Cursor: q.Get("cursor"), Limit: PageSize}
	in.Since = parseWhen(q.Get("from"), false, "from", p.Errs)
	in.Until = parseWhen(q.Get("to"), true, "to", p.Errs)
	if len(p.Errs) > 0 {
		o.render(w, r, s, http.StatusBadRequest, "op_tasks", "Tasks", p)
		return nil
	}
	list, err := o.cfg.Admin.SearchTasks(r.Context(), s.Actor, in)
	if err != nil {
		e := apierr.As(err)
		if e.Kind != apierr.KindInvalid {
			return err
		}
		p.Errs[paramField(e.Param, map[string]string{"until": "to", "since": "from"},
			"tenant", "key", "status", "alias", "route", "upstream_job", "from", "to", "cursor")] = e.Message
		o.render(w, r, s, http.StatusBadRequest, "op_tasks", "Tasks", p)
		return nil
	}
	p.Searched, p.Tasks = true, list.Data
	if list.HasMore {
		p.Next = nextPage(r.URL, list.NextCursor)
	}
	o.Render(w, r, s, "op_tasks", "Tasks", p)
	return nil
}

// parseWhen reads a search bound: a date (its start; the end of it for an upper bound), a
// browser's datetime-local (UTC) or RFC 3339.
func parseWhen(s string, end bool, field string, errs fieldErrs) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	if d, err := time.ParseInLocation(time.DateOnly, s, time.UTC); err == nil {
		if end {
			d = d.AddDate(0, 0, 1)
		}
		return d
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t.UTC()
		}
	}
	errs[field] = "Enter a date (2026-11-01) or a date and time in UTC (2026-11-01T13:00)."
	return time.Time{}
}

type opTaskPage struct {
	Task     admin.TaskDetail
	Internal bool // the session may read the internal error
	// Result is the completed task's result as the tenant's page plays it (zero: none).
	Result playable
}

// taskReader is the store's read of one task (admin.SupportStore has it; the SQL stores do).
type taskReader interface {
	Task(ctx context.Context, id string) (store.Task, error)
}

func (o *Operator) taskPage(w http.ResponseWriter, r *http.Request, s *Session) error {
	d, err := o.cfg.Admin.Task(r.Context(), s.Actor, r.PathValue("id"))
	if err != nil {
		return err
	}
	p := opTaskPage{Task: d, Internal: s.Can(admin.RoleOperator)}
	// admin.TaskDetail (the admin API's JSON) carries no result: the page reads the task's
	// result from the store, after admin.Task has checked the role and that the task exists.
	if tr, ok := o.cfg.Admin.Store().(taskReader); ok && o.cfg.Links != nil && d.Status == store.StatusCompleted {
		task, err := tr.Task(r.Context(), d.ID)
		if err != nil {
			return fmt.Errorf("console: result of %s: %w", d.ID, err)
		}
		p.Result = playableOf(task, o.cfg.Links)
	}
	o.Render(w, r, s, "op_task", "Task "+d.ID, p)
	return nil
}

type opSpeechPage struct {
	Speech   admin.SpeechDetail
	Internal bool
	Audio    string // a fresh link to the completed record's audio ("" when none)
}

// speechReader is the store's read of one speech record (admin.SupportStore has it).
type speechReader interface {
	Speech(ctx context.Context, id string) (store.Speech, error)
}

func (o *Operator) speechPage(w http.ResponseWriter, r *http.Request, s *Session) error {
	d, err := o.cfg.Admin.Speech(r.Context(), s.Actor, r.PathValue("id"))
	if err != nil {
		return err
	}
	p := opSpeechPage{Speech: d, Internal: s.Can(admin.RoleOperator)}
	if sr, ok := o.cfg.Admin.Store().(speechReader); ok && o.cfg.Links != nil && d.Status == store.SpeechCompleted {
		sp, err := sr.Speech(r.Context(), d.ID)
		if err != nil {
			return fmt.Errorf("console: result of %s: %w", d.ID, err)
		}
		var res speech.Result
		if err := jsonv2.Unmarshal(sp.Result, &res); err == nil && res.AudioKey != "" {
			p.Audio = o.cfg.Links.Link(res.AudioKey)
		}
	}
	o.Render(w, r, s, "op_tasks_speech", "Speech "+d.ID, p)
	return nil
}

// filterInput is one text filter of the search form.
type filterInput struct{ Name, Label, Value, Err string }

// Field is the text filter name, for the form's "tf" template.
func (p opTasksPage) Field(name, label string) filterInput {
	return filterInput{Name: name, Label: label, Value: p.Val(name), Err: p.Err(name)}
}
