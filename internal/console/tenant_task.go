package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// The tenant console's task page (GET /console/tasks/{id}), its live status
// (GET /console/tasks/{id}/status.json) and the speech record page (GET /console/speech/{id}).

// taskPage is the data of tenant_task.html.
type taskPage struct {
	Task     taskRow
	View     contract.VideoTask
	Events   []timelineEntry
	Currency string
	// Result is the played file's link and its poster ("" when there is none).
	Result, Poster string
	Deleted        bool
}

// Terminal reports whether the task has ended (the page then stops polling).
func (p taskPage) Terminal() bool { return store.Terminal(p.Task.Status) }

// StatusURL is the JSON the page polls while the task runs.
func (p taskPage) StatusURL() string { return "/console/tasks/" + p.Task.ID + "/status.json" }

// timelineEntry is one moment of a record's history as its owner sees it: when, the status
// after it, and what happened. The internal detail operators read is never part of it.
type timelineEntry struct {
	At     time.Time
	Status string
	What   string
}

// stepLabels name the pipeline's steps for tenants.
var stepLabels = map[string]string{
	"generate_submit": "submitting for generation",
	"generate_poll":   "generating",
	"enhance_submit":  "submitting for enhancement",
	"enhance_poll":    "enhancing",
}

// timeline turns a record's events (event 0 is its acceptance) into what its owner is shown.
func timeline(events []store.TaskEvent) []timelineEntry {
	out := make([]timelineEntry, 0, len(events))
	prevStep := ""
	for i, e := range events {
		var what string
		switch {
		case i == 0 && e.Seq == 0:
			what = "Accepted"
		case e.From != e.To:
			what = "Status changed from " + e.From + " to " + e.To
			if l, ok := stepLabels[e.Step]; ok {
				what += ": " + l
			}
		case e.Step != prevStep:
			if l, ok := stepLabels[e.Step]; ok {
				what = "Now " + l
			} else {
				what = "Moved on"
			}
		default:
			what = "An attempt did not succeed; it is retried"
		}
		prevStep = e.Step
		out = append(out, timelineEntry{At: e.At, Status: e.To, What: what})
	}
	return out
}

// task is GET /console/tasks/{id}: one of the key's own tasks.
func (t *Tenant) task(w http.ResponseWriter, r *http.Request, s *Session) error {
	task, err := t.cfg.Videos.Get(r.Context(), s.Caller, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := t.reads()
	if err != nil {
		return err
	}
	events, err := st.TaskEvents(r.Context(), task.ID)
	if err != nil {
		return fmt.Errorf("console: events of %s: %w", task.ID, err)
	}
	pl := playableOf(task, video.LinkerIn(r.Context(), t.cfg.Links))
	p := taskPage{Task: taskRow{task}, View: pl.View, Events: timeline(events), Currency: s.Caller.Tenant.Currency,
		Result: pl.Result, Poster: pl.Poster, Deleted: pl.Deleted}
	t.Render(w, r, s, "tenant_task", "Task "+task.ID, p)
	return nil
}

// taskStatus is the JSON of GET /console/tasks/{id}/status.json, read by console.js.
type taskStatus struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress int    `json:"progress"`
	Terminal bool   `json:"terminal"`
	// UpdatedAt is when the task last changed (Unix seconds).
	UpdatedAt int64 `json:"updated_at"`
}

// taskStatusJSON answers the task page's poll. Errors are JSON too (the page's script only
// looks at the status code).
func (t *Tenant) taskStatusJSON(w http.ResponseWriter, r *http.Request, s *Session) error {
	w.Header().Set("Content-Type", "application/json")
	task, err := t.cfg.Videos.Get(r.Context(), s.Caller, r.PathValue("id"))
	if err != nil {
		e := apierr.As(err)
		if e.Kind == apierr.KindInternal || e.Kind == apierr.KindUnavailable {
			t.Logger.ErrorContext(r.Context(), "console task status failed", "err", err)
			e = apierr.New(apierr.KindInternal, "The task could not be read. Try again.")
		}
		w.WriteHeader(e.Status())
		return json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": e.CodeOrDefault(), "message": e.Message}})
	}
	return json.NewEncoder(w).Encode(taskStatus{ID: task.ID, Status: task.Status, Progress: task.Progress,
		Terminal: store.Terminal(task.Status), UpdatedAt: task.UpdatedAt.Unix()})
}

// speechPage is the data of tenant_speech.html.
type speechPage struct {
	Speech   speechRow
	Events   []timelineEntry
	Currency string
	Audio    string  // a fresh link to the audio, "" when there is none
	Duration float64 // seconds of audio
}

// speechRecord is GET /console/speech/{id}: one of the key's own speech records.
func (t *Tenant) speechRecord(w http.ResponseWriter, r *http.Request, s *Session) error {
	sp, err := t.ownSpeech(r.Context(), s, r.PathValue("id"))
	if err != nil {
		return err
	}
	st, err := t.reads()
	if err != nil {
		return err
	}
	events, err := st.SpeechEvents(r.Context(), sp.ID)
	if err != nil {
		return fmt.Errorf("console: events of %s: %w", sp.ID, err)
	}
	p := speechPage{Speech: speechRow{sp}, Events: timeline(events), Currency: s.Caller.Tenant.Currency}
	if sp.Status == store.SpeechCompleted && len(sp.Result) > 0 {
		var res speech.Result
		if err := jsonv2.Unmarshal(sp.Result, &res); err == nil {
			p.Duration = float64(res.DurationMicros) / 1e6
			if res.AudioKey != "" && t.cfg.Links != nil {
				p.Audio = video.LinkerIn(r.Context(), t.cfg.Links).Link(res.AudioKey)
			}
		}
	}
	t.Render(w, r, s, "tenant_speech", "Speech "+sp.ID, p)
	return nil
}
