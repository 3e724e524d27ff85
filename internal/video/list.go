package video

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// GET /v1/videos: the calling key's own tasks, newest first, in the list shape OpenAI's SDKs
// page through (object "list", data, first_id, last_id, has_more; after, limit, order). An
// addition to the contract: no other answer changes. See docs/video.md#listing-your-tasks.

// List bounds.
const (
	ListDefaultLimit = 20
	ListMaxLimit     = 100
)

// ListQuery is a parsed GET /v1/videos query.
type ListQuery struct {
	After  string // a task id of the key: the page starts after it
	Limit  int
	Asc    bool
	Status string
	// CreatedAfter and CreatedBefore bound created_at as the task shows it (whole unix
	// seconds), both exclusive; zero when not given.
	CreatedAfter, CreatedBefore time.Time
}

// ParseListQuery reads and checks the query; a bad value is a 400 naming its parameter.
// Unknown parameters are ignored, as OpenAI's list endpoints do.
func ParseListQuery(q url.Values) (ListQuery, error) {
	l := ListQuery{Limit: ListDefaultLimit}
	one := func(name string) (string, bool, error) {
		vs, ok := q[name]
		if !ok {
			return "", false, nil
		}
		if len(vs) != 1 {
			return "", false, apierr.Invalid(name, fmt.Sprintf("Give %s at most once.", name))
		}
		return vs[0], true, nil
	}
	if v, ok, err := one("after"); err != nil {
		return l, err
	} else if ok {
		if v == "" {
			return l, apierr.Invalid("after", "after must be the id of a task of this API key.")
		}
		l.After = v
	}
	if v, ok, err := one("limit"); err != nil {
		return l, err
	} else if ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ListMaxLimit {
			return l, apierr.Invalid("limit", fmt.Sprintf("limit must be an integer from 1 to %d.", ListMaxLimit))
		}
		l.Limit = n
	}
	if v, ok, err := one("order"); err != nil {
		return l, err
	} else if ok {
		switch v {
		case "desc":
		case "asc":
			l.Asc = true
		default:
			return l, apierr.Invalid("order", "order must be asc or desc.")
		}
	}
	if v, ok, err := one("status"); err != nil {
		return l, err
	} else if ok {
		switch v {
		case store.StatusQueued, store.StatusInProgress, store.StatusCompleted, store.StatusFailed, store.StatusExpired:
			l.Status = v
		default:
			return l, apierr.Invalid("status", "status must be one of queued, in_progress, completed, failed, expired.")
		}
	}
	for _, b := range []struct {
		name string
		to   *time.Time
	}{{"created_after", &l.CreatedAfter}, {"created_before", &l.CreatedBefore}} {
		v, ok, err := one(b.name)
		if err != nil {
			return l, err
		}
		if !ok {
			continue
		}
		at, err := parseTime(v)
		if err != nil {
			return l, apierr.Invalid(b.name, b.name+" must be unix seconds (1795306534) or an RFC 3339 time (2026-11-25T10:00:00Z).")
		}
		*b.to = at
	}
	return l, nil
}

// parseTime reads unix seconds or RFC 3339, to the second below (the resolution of
// created_at as the task shows it).
func parseTime(v string) (time.Time, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 || n > 1<<40 {
			return time.Time{}, errors.New("out of range")
		}
		return time.Unix(n, 0).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, err
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, errors.New("out of range")
	}
	return t.Truncate(time.Second).UTC(), nil
}

// TaskSearcher is the store's task search, which List reads through (the SQL store has it).
type TaskSearcher interface {
	SearchTasks(ctx context.Context, f store.TaskFilter) ([]store.Task, error)
}

// List returns a page of the caller's own tasks and whether more follow. Another key's
// task never appears; an after that is not one of the caller's tasks is a 400 (it is not
// told apart from an unknown id, as GET /v1/videos/{id} does not tell them apart).
func (s *Service) List(ctx context.Context, c keys.Caller, q ListQuery) ([]store.Task, bool, error) {
	search, ok := s.Store.(TaskSearcher)
	if !ok {
		return nil, false, errors.New("video list: the store cannot search tasks")
	}
	f := store.TaskFilter{KeyID: c.Key.ID, Status: q.Status, Page: store.Page{Limit: q.Limit + 1, Asc: q.Asc}}
	if !q.CreatedAfter.IsZero() {
		f.CreatedFrom = q.CreatedAfter.Add(time.Second) // shown created_at > the value
	}
	if !q.CreatedBefore.IsZero() {
		f.CreatedTo = q.CreatedBefore // shown created_at < the value
	}
	if q.After != "" {
		t, err := s.Store.Task(ctx, q.After)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && t.KeyID != c.Key.ID):
			return nil, false, apierr.Invalid("after", "after must be the id of a task of this API key.")
		case err != nil:
			return nil, false, fmt.Errorf("video list: read the after task: %w", err)
		}
		f.AfterAt, f.AfterID = t.CreatedAt, t.ID
	}
	tasks, err := search.SearchTasks(ctx, f)
	if err != nil {
		return nil, false, fmt.Errorf("video list: %w", err)
	}
	more := len(tasks) > q.Limit
	if more {
		tasks = tasks[:q.Limit]
	}
	return tasks, more, nil
}
