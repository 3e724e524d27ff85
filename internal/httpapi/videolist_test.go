package httpapi

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/store"
	"mediagen/internal/video"
)

// listEnv is a video server on one store driver with two keys of one tenant.
type listEnv struct {
	*videoEnv
	other string // a sibling key of the same tenant
}

func newListEnv(t *testing.T, driver string) *listEnv {
	t.Helper()
	p := &fakeProber{t: t, seconds: map[string]float64{}}
	e := newTestEnvOn(t, driver, testCatalog(t), &video.Service{Prober: p}, DefaultMaxBodyBytes)
	secret, k := e.newKey("acme", startCredit, false)
	other, _ := e.newKey("acme", startCredit, false)
	return &listEnv{videoEnv: &videoEnv{testEnv: e, key: secret, keyRec: k, prober: p}, other: other}
}

// create makes n tasks with key and returns their ids newest first, the order the list uses
// (created_at, then id).
func (e *listEnv) create(t *testing.T, key string, n int) []string {
	t.Helper()
	type row struct {
		id string
		at time.Time
	}
	var rows []row
	for range n {
		tb := decodeTask(t, e.post(key, `{"model":"acme-video-2.5","prompt":"a cat"}`))
		task, err := e.store.Task(context.Background(), tb.ID)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row{tb.ID, task.CreatedAt})
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.id)
	}
	return ids
}

func (e *listEnv) list(key, query string) response {
	e.t.Helper()
	return e.do("GET", "/v1/videos"+query, map[string]string{"Authorization": "Bearer " + key}, "")
}

// listBody is the list shape OpenAI's SDKs read (SyncConversationCursorPage and the like):
// every member is checked, and no other is allowed.
type listBody struct {
	Object  string           `json:"object"`
	Data    []jsontext.Value `json:"data"`
	FirstID *string          `json:"first_id"`
	LastID  *string          `json:"last_id"`
	HasMore *bool            `json:"has_more"`
}

func decodeList(t *testing.T, r response) (listBody, []string) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var b listBody
	if err := json.Unmarshal(r.body, &b, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("list body: %v: %s", err, r.body)
	}
	if b.Object != "list" || b.Data == nil || b.HasMore == nil || hasJSONNull(r.body) {
		t.Fatalf("list body is not the list shape: %s", r.body)
	}
	ids := []string{}
	for _, d := range b.Data {
		// The item's full shape is GET's, compared member by member where it matters.
		var tb struct {
			ID     string `json:"id"`
			TaskID string `json:"task_id"`
			Object string `json:"object"`
		}
		if err := json.Unmarshal(d, &tb); err != nil || tb.ID == "" || tb.TaskID != tb.ID || tb.Object != "video" {
			t.Fatalf("list item: %v: %s", err, d)
		}
		ids = append(ids, tb.ID)
	}
	switch {
	case len(ids) == 0 && (b.FirstID != nil || b.LastID != nil):
		t.Errorf("empty page with first_id/last_id: %s", r.body)
	case len(ids) > 0 && (b.FirstID == nil || *b.FirstID != ids[0] || b.LastID == nil || *b.LastID != ids[len(ids)-1]):
		t.Errorf("first_id/last_id do not name the page's ends: %s", r.body)
	}
	return b, ids
}

func TestListVideosShowsOnlyTheKeysOwnTasksNewestFirst(t *testing.T) {
	t.Parallel()
	for _, driver := range testDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newListEnv(t, driver)
			empty, ids := decodeList(t, e.list(e.key, ""))
			if len(ids) != 0 || *empty.HasMore {
				t.Fatalf("a key without tasks: %+v", empty)
			}
			mine := e.create(t, e.key, 4)
			theirs := e.create(t, e.other, 3)
			b, ids := decodeList(t, e.list(e.key, ""))
			if !slices.Equal(ids, mine) || *b.HasMore {
				t.Errorf("own list = %v (has_more %v), want %v", ids, *b.HasMore, mine)
			}
			_, ids = decodeList(t, e.list(e.other, ""))
			if !slices.Equal(ids, theirs) {
				t.Errorf("sibling's list = %v, want %v", ids, theirs)
			}
			// Each item is exactly the task as GET /v1/videos/{id} shows it.
			for i, d := range b.Data {
				one := e.get(e.key, mine[i])
				if !sameJSON(t, d, one.body) {
					t.Errorf("item %d = %s, GET = %s", i, d, one.body)
				}
			}
		})
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x, json.Deterministic(true))
	jb, _ := json.Marshal(y, json.Deterministic(true))
	return string(ja) == string(jb)
}

func TestListVideosPagesWithAfterLimitAndOrder(t *testing.T) {
	t.Parallel()
	for _, driver := range testDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newListEnv(t, driver)
			mine := e.create(t, e.key, 5)
			e.create(t, e.other, 2)
			for _, order := range []string{"desc", "asc"} {
				want := mine
				if order == "asc" {
					want = slices.Clone(mine)
					slices.Reverse(want)
				}
				var got []string
				after := ""
				for pages := 0; pages < 10; pages++ {
					q := "?limit=2&order=" + order
					if after != "" {
						q += "&after=" + after
					}
					b, ids := decodeList(t, e.list(e.key, q))
					got = append(got, ids...)
					if wantMore := len(got) < len(want); *b.HasMore != wantMore {
						t.Errorf("%s page %d: has_more %v after %d of %d", order, pages, *b.HasMore, len(got), len(want))
					}
					if !*b.HasMore {
						break
					}
					after = *b.LastID
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s pages = %v, want %v", order, got, want)
				}
			}
			_, ids := decodeList(t, e.list(e.key, "?limit=100"))
			if !slices.Equal(ids, mine) {
				t.Errorf("limit=100: %v", ids)
			}
		})
	}
}

func TestListVideosFiltersByStatusAndCreationTime(t *testing.T) {
	t.Parallel()
	for _, driver := range testDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newListEnv(t, driver)
			mine := e.create(t, e.key, 3)
			ctx := context.Background()
			failed := mine[1]
			if err := e.store.Transact(ctx, func(tx store.Tx) error {
				return tx.AdvanceTask(ctx, store.Advance{ID: failed, Status: store.StatusFailed, Step: "done",
					ErrorCode: "video_generation_failed", ErrorMessage: "The video could not be generated.", FinishedAt: time.Now()})
			}); err != nil {
				t.Fatal(err)
			}
			task, err := e.store.Task(ctx, mine[0])
			if err != nil {
				t.Fatal(err)
			}
			shown := task.CreatedAt.Unix() // all three were created within a second or two
			hour := time.Unix(shown, 0).UTC().Add(-time.Hour).Format(time.RFC3339)
			for _, tc := range []struct {
				query string
				want  []string
			}{
				{"?status=failed", []string{failed}},
				{"?status=queued", []string{mine[0], mine[2]}},
				{"?status=completed", []string{}},
				{"?created_after=" + strconv.FormatInt(shown+10, 10), []string{}},
				{"?created_before=" + strconv.FormatInt(shown+10, 10), mine},
				{"?created_before=" + strconv.FormatInt(shown-10, 10), []string{}},
				{"?created_after=" + url.QueryEscape(hour), mine},
				{"?created_after=" + url.QueryEscape(hour) + "&status=failed&order=asc", []string{failed}},
				{"?unknown_parameter=1", mine},
			} {
				_, ids := decodeList(t, e.list(e.key, tc.query))
				if !slices.Equal(ids, tc.want) {
					t.Errorf("%s: %v, want %v", tc.query, ids, tc.want)
				}
			}
		})
	}
}

func TestListVideosBadParametersAnswer400WithParam(t *testing.T) {
	t.Parallel()
	e := newListEnv(t, "sqlite")
	e.create(t, e.key, 1)
	theirs := e.create(t, e.other, 1)
	for _, tc := range []struct{ query, param string }{
		{"?limit=0", "limit"},
		{"?limit=101", "limit"},
		{"?limit=ten", "limit"},
		{"?limit=1&limit=2", "limit"},
		{"?order=newest", "order"},
		{"?status=done", "status"},
		{"?status=", "status"},
		{"?created_after=yesterday", "created_after"},
		{"?created_before=-5", "created_before"},
		{"?after=", "after"},
		{"?after=video_doesnotexist0000", "after"},
		{"?after=" + theirs[0], "after"}, // another key's task is not told apart from an unknown one
	} {
		r := e.list(e.key, tc.query)
		decodeErr(t, r, 400, "invalid_request_error", "invalid_request_error", tc.param)
		if strings.Contains(string(r.body), theirs[0]) {
			t.Errorf("%s: the error names another key's task: %s", tc.query, r.body)
		}
	}
	checkEnvelope(t, e.do("GET", "/v1/videos", nil, ""), 401, "authentication_error", "missing_api_key")
	r := e.do("DELETE", "/v1/videos", map[string]string{"Authorization": "Bearer " + e.key}, "")
	checkEnvelope(t, r, 405, "invalid_request_error", "method_not_allowed")
	if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow = %q", allow)
	}
}
