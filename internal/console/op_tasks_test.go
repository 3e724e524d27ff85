package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
)

// addTask stores a video task of key k created at at; a non-queued one ran on ark-main with
// upstream job "cgt-<id>" and has a reservation in the ledger.
func (e *opEnv) addTask(t *testing.T, keyID, id, status string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	task := store.Task{ID: id, KeyID: keyID, TenantID: "demo", Route: "native", Model: "seedance", Status: store.StatusQueued,
		PayloadHash: []byte{1}, Request: []byte(`{"upstream":"ark-main","upstream_model":"seedance-1-0-pro"}`),
		Pricing: []byte(`{}`), Reserved: 1000, CreatedAt: at, UpdatedAt: at}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		return tx.Post(ctx, store.Txn{ID: "txn_res_" + id, Kind: "reserve", Ref: id, CreatedAt: at, Entries: []store.Entry{
			{Account: store.AccountID(keyID, store.AccountAvailable), Amount: -1000},
			{Account: store.AccountID(keyID, store.AccountReserved), Amount: 1000}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if status == store.StatusQueued {
		return
	}
	a := store.Advance{ID: id, Status: status, Progress: 50, Step: "gen_poll", State: []byte(`{"gen_job":"cgt-` + id + `"}`),
		Attempt: 1, Upstream: "ark-main", UpstreamJob: "cgt-" + id}
	if status == store.StatusFailed {
		a.ErrorCode, a.ErrorMessage, a.Detail, a.FinishedAt = "video_generation_failed", "The video could not be generated.",
			"ark-main said: OutputVideoSensitiveContentDetected", at
	}
	if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) }); err != nil {
		t.Fatal(err)
	}
}

func TestTasksSearchByIdRedirectsToItsPage(t *testing.T) {
	e := newOpEnv(t)
	b := e.browser(t, e.viewer)
	for _, tc := range []struct{ q, want string }{
		{"video_abc", "/console/tasks/video_abc"},
		{" speech_abc ", "/console/speech/speech_abc"},
		{"asset_abc", "/console/assets/asset_abc"},
	} {
		p := b.get("/console/tasks?q=" + url.QueryEscape(tc.q))
		if p.status != http.StatusSeeOther || p.header.Get("Location") != tc.want {
			t.Errorf("q=%q: %d %q; want a redirect to %s", tc.q, p.status, p.header.Get("Location"), tc.want)
		}
	}
	if p := b.get("/console/tasks?q=nonsense"); p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="q-error"`) {
		t.Errorf("q=nonsense: %d", p.status)
	}
}

func TestTasksFiltersAndPagingWalkEachResultOnce(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 1_000_000_000)
	other := e.newKey(t, 1_000_000_000)
	base := e.clock.Now().Add(-time.Hour)
	want := map[string]bool{}
	for i := 0; i < PageSize+7; i++ {
		id := fmt.Sprintf("video_k%03d", i)
		e.addTask(t, k.ID, id, store.StatusInProgress, base.Add(time.Duration(i)*time.Second))
		want[id] = true
	}
	e.addTask(t, k.ID, "video_done", store.StatusFailed, base)
	e.addTask(t, other.ID, "video_other", store.StatusInProgress, base)
	b := e.browser(t, e.viewer)
	rowLink := regexp.MustCompile(`<td data-label="Task"><a href="/console/tasks/([^"]+)"`)
	seen := map[string]bool{}
	next := "/console/tasks?status=in_progress&key=" + url.QueryEscape(k.ID) + "&tenant=demo&from=" + base.Add(-time.Minute).Format("2006-01-02T15:04")
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatal("too many pages")
		}
		p := b.get(next)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d\n%s", next, p.status, p.body)
		}
		for _, m := range rowLink.FindAllStringSubmatch(p.body, -1) {
			if seen[m[1]] {
				t.Errorf("%s listed twice", m[1])
			}
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`<a href="([^"]+)" rel="next">`).FindStringSubmatch(p.body); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != len(want) {
		t.Errorf("walked %d tasks; want %d", len(seen), len(want))
	}
	for id := range seen {
		if !want[id] {
			t.Errorf("%s does not match the filters", id)
		}
	}

	p := b.get("/console/tasks?upstream_job=cgt-video_other")
	if got := rowLink.FindAllStringSubmatch(p.body, -1); len(got) != 1 || got[0][1] != "video_other" {
		t.Errorf("by upstream job: %v", got)
	}
	for _, tc := range []struct{ query, field string }{
		{"status=sideways", "status"}, {"from=yesterday", "from"}, {"from=2026-11-02&to=2026-11-01", "to"}, {"cursor=%21%21", "cursor"},
	} {
		p := b.get("/console/tasks?" + tc.query)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "field-error") {
			t.Errorf("%s: %d; want 400 with a message", tc.query, p.status)
		}
	}
}

func TestOperatorTaskPageShowsUpstreamJobLedgerAndInternalErrorToOperatorsOnly(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 10_000_000)
	e.addTask(t, k.ID, "video_fail", store.StatusFailed, e.clock.Now().Add(-time.Minute))
	op := e.browser(t, e.oper)
	p := op.get("/console/tasks/video_fail")
	if p.status != http.StatusOK {
		t.Fatalf("task page: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{"cgt-video_fail", "ark-main", `id="ledger"`, "txn_res_video_fail", `href="/console/keys/` + k.ID + `"`,
		"OutputVideoSensitiveContentDetected", "video_generation_failed"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	v := e.browser(t, e.viewer)
	p = v.get("/console/tasks/video_fail")
	if p.status != http.StatusOK || strings.Contains(p.body, "OutputVideoSensitiveContentDetected") || !strings.Contains(p.body, "cgt-video_fail") {
		t.Errorf("viewer's task page: %d, shows the internal error: %v", p.status, strings.Contains(p.body, "OutputVideoSensitiveContentDetected"))
	}
	if p := op.get("/console/tasks/video_nope"); p.status != http.StatusNotFound {
		t.Errorf("unknown task: %d", p.status)
	}
	// The key page lists the task and its reservation.
	p = op.get("/console/keys/" + k.ID)
	if !strings.Contains(p.body, `href="/console/tasks/video_fail"`) || !strings.Contains(p.body, "txn_res_video_fail") {
		t.Errorf("key page lacks the task or its ledger entry:\n%s", p.body)
	}
}

func TestOperatorSpeechPageShowsTheRecordAndItsUpstream(t *testing.T) {
	e := newOpEnv(t)
	k := e.newKey(t, 10_000_000)
	ctx := context.Background()
	now := e.clock.Now()
	sp := store.Speech{ID: "speech_one", KeyID: k.ID, TenantID: "demo", Model: "voice", Status: store.SpeechPending, PayloadHash: []byte{1},
		Request: []byte(`{"upstream":"tts-main","upstream_model":"tts-1"}`), Pricing: []byte(`{}`), Reserved: 10,
		AttemptToken: "attempt_1", AttemptUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}
	if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.CreateSpeech(ctx, sp) }); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t, e.viewer)
	p := b.get("/console/speech/speech_one")
	if p.status != http.StatusOK || !strings.Contains(p.body, "tts-main") || !strings.Contains(p.body, `href="/console/keys/`+k.ID+`"`) {
		t.Errorf("speech page: %d\n%s", p.status, p.body)
	}
	if p := b.get("/console/speech/speech_none"); p.status != http.StatusNotFound {
		t.Errorf("unknown speech record: %d", p.status)
	}
}
