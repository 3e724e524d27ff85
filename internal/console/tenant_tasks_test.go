package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// fakeLinks mints recognisable links to stored files.
type fakeLinks struct{}

func (fakeLinks) Link(key string) string { return "https://media.example/signed/" + key + "?sig=abc" }

// tasksEnv is the tenant test environment with a console that links results (its Links set),
// and helpers that make tasks of the key through the video service.
type tasksEnv struct {
	*tenantEnv
}

func newTasksEnv(t *testing.T) *tasksEnv {
	t.Helper()
	e := newTenantEnv(t)
	con, err := NewTenant(TenantConfig{Common: Common{Sessions: e.st, Now: e.clock.Now, MediaOrigins: []string{"https://media.example"}},
		Store: e.st, Catalogs: catalog.Static(e.cat), Videos: e.videos, Links: fakeLinks{}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(con)
	t.Cleanup(ts.Close)
	e.con, e.ts = con, ts
	return &tasksEnv{e}
}

// caller is the keys.Caller of a key of the demo tenant, as the console's sign-in builds it.
func (e *tasksEnv) caller(t *testing.T, keyID string) keys.Caller {
	t.Helper()
	k, err := e.st.Key(context.Background(), keyID)
	if err != nil {
		t.Fatal(err)
	}
	tenant, ok := e.cat.Tenant("demo")
	if !ok {
		t.Fatal("no demo tenant")
	}
	return keys.Caller{Key: k, Tenant: tenant, Catalog: e.cat}
}

// create makes a task of the key through the video service, a second later than the last.
func (e *tasksEnv) create(t *testing.T, keyID, body string) store.Task {
	t.Helper()
	e.clock.Advance(time.Second)
	task, _, err := e.videos.Create(context.Background(), e.caller(t, keyID), []byte(body))
	if err != nil {
		t.Fatalf("create %s: %v", body, err)
	}
	return task
}

// advance applies a run's update to a task, as the job runner does.
func (e *tasksEnv) advance(t *testing.T, a store.Advance) {
	t.Helper()
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) }); err != nil {
		t.Fatal(err)
	}
}

// otherKey makes a second key of the demo tenant and returns its id and secret.
func (e *tasksEnv) otherKey(t *testing.T) (string, string) {
	t.Helper()
	made, err := e.svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "demo", Name: "other", Credit: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return made.ID, made.Secret
}

const fastBody = `{"model":"demo-video-fast","prompt":"a paper boat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`

var taskLink = regexp.MustCompile(`href="/console/tasks/([^"/]+)"`)

// listed is the task ids a list page links to, in order, and its next page's path.
func listed(t *testing.T, p page) ([]string, string) {
	t.Helper()
	if p.status != http.StatusOK {
		t.Fatalf("list: %d\n%s", p.status, p.body)
	}
	var ids []string
	for _, m := range taskLink.FindAllStringSubmatch(p.body, -1) {
		ids = append(ids, m[1])
	}
	next := ""
	if m := nextLink.FindStringSubmatch(p.body); m != nil {
		next = strings.ReplaceAll(m[1], "&amp;", "&")
	}
	return ids, next
}

func TestTaskListShowsOnlyTheKeysTasksNewestFirstAndPagesThroughEachOnce(t *testing.T) {
	e := newTasksEnv(t)
	otherID, _ := e.otherKey(t)
	theirs := e.create(t, otherID, fastBody)
	var mine []string
	for range PageSize*2 + 3 {
		mine = append(mine, e.create(t, e.keyID, fastBody).ID)
	}
	slices.Reverse(mine) // newest first
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	var seen []string
	path := "/console/"
	pages := 0
	for path != "" {
		pages++
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		ids, next := listed(t, b.get(path))
		if len(ids) > PageSize {
			t.Fatalf("page %d has %d tasks; at most %d", pages, len(ids), PageSize)
		}
		seen = append(seen, ids...)
		path = next
	}
	if pages != 3 || !slices.Equal(seen, mine) {
		t.Fatalf("walked %d pages, %d tasks; want 3 pages of the key's %d tasks newest first, each once", pages, len(seen), len(mine))
	}
	if slices.Contains(seen, theirs.ID) {
		t.Error("another key's task is listed")
	}
}

func TestTaskListFilters(t *testing.T) {
	e := newTasksEnv(t)
	fast1 := e.create(t, e.keyID, fastBody)
	other := e.create(t, e.keyID, `{"model":"demo-video-2.5","prompt":"a cat","metadata":{"duration":4,"resolution":"480p"}}`)
	fast2 := e.create(t, e.keyID, fastBody)
	e.advance(t, store.Advance{ID: fast2.ID, Status: store.StatusFailed, Step: "done", ErrorCode: "video_generation_failed",
		ErrorMessage: "The video could not be generated.", FinishedAt: e.clock.Now()})
	day := e.clock.Now().UTC().Format(time.DateOnly)
	tomorrow := e.clock.Now().UTC().AddDate(0, 0, 1).Format(time.DateOnly)
	yesterday := e.clock.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{fast2.ID, other.ID, fast1.ID}},
		{"status=failed", []string{fast2.ID}},
		{"status=queued", []string{other.ID, fast1.ID}},
		{"alias=demo-video-2.5", []string{other.ID}},
		{"alias=demo-video-fast&status=queued", []string{fast1.ID}},
		{"route=native", []string{fast2.ID, other.ID, fast1.ID}},
		{"route=production", nil},
		{"from=" + day + "&to=" + day, []string{fast2.ID, other.ID, fast1.ID}},
		{"from=" + tomorrow, nil},
		{"to=" + yesterday, nil},
	} {
		ids, next := listed(t, b.get("/console/?"+tc.query))
		if !slices.Equal(ids, tc.want) || next != "" {
			t.Errorf("?%s: %v (next %q); want %v", tc.query, ids, next, tc.want)
		}
	}
	p := b.get("/console/?alias=not-ours&from=" + url.QueryEscape("2026-13-01") + "&status=failed")
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="f-alias" name="alias" aria-invalid="true"`) ||
		!strings.Contains(p.body, "no model alias") || !strings.Contains(p.body, "YYYY-MM-DD") ||
		!strings.Contains(p.body, `value="2026-13-01"`) || !strings.Contains(p.body, `<option value="failed" selected>`) {
		t.Errorf("bad filters: %d; want 400 with the messages next to their fields and the values kept\n%s", p.status, p.body)
	}
	if taskLink.MatchString(p.body) {
		t.Error("bad filters listed tasks")
	}
}

func TestAnotherKeysTaskIsNotFound(t *testing.T) {
	e := newTasksEnv(t)
	otherID, _ := e.otherKey(t)
	theirs := e.create(t, otherID, fastBody)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	for _, path := range []string{"/console/tasks/" + theirs.ID, "/console/tasks/video_nosuchtask", "/console/tasks/" + theirs.ID + "/status.json",
		"/console/?after=" + theirs.ID} {
		p := b.get(path)
		if p.status != http.StatusNotFound || strings.Contains(p.body, "paper boat") {
			t.Errorf("%s: %d; want 404\n%s", path, p.status, p.body)
		}
	}
}

func TestTaskPageShowsTimelineAndFailedTasksError(t *testing.T) {
	e := newTasksEnv(t)
	task := e.create(t, e.keyID, fastBody)
	e.clock.Advance(time.Second)
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusInProgress, Step: "generate_poll", Attempt: 1, Upstream: "sandbox", Progress: 40})
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		return tx.AppendTaskEvent(ctx, store.TaskEvent{TaskID: task.ID, At: e.clock.Now(), Attempt: 2, Detail: "upstream said: secret internal 503"})
	}); err != nil {
		t.Fatal(err)
	}
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusFailed, Step: "done", Attempt: 2, ErrorCode: "content_policy_violation",
		ErrorMessage: "The prompt was refused by the content policy.", FinishedAt: e.clock.Now(), Detail: "moderation: flagged words"})
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/tasks/" + task.ID)
	if p.status != http.StatusOK {
		t.Fatalf("task page: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{task.ID, "Accepted", "Status changed from queued to in_progress: generating", "An attempt did not succeed",
		"Status changed from in_progress to failed", "content_policy_violation", "The prompt was refused by the content policy.",
		"demo-video-fast", "native", `class="timeline"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("task page lacks %q", want)
		}
	}
	for _, secret := range []string{"secret internal 503", "flagged words", "sandbox", "data-poll", "<video"} {
		if strings.Contains(p.body, secret) {
			t.Errorf("task page shows %q", secret)
		}
	}
}

func TestCompletedTaskPlaysItsResultInline(t *testing.T) {
	e := newTasksEnv(t)
	task := e.create(t, e.keyID, fastBody)
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusCompleted, Step: "done", Progress: 100, Charged: 120_000,
		Result:     []byte(`{"video_key":"videos/` + task.ID + `.mp4","thumbnail_key":"thumbs/` + task.ID + `.jpg","duration":5,"fps":24,"width":1280,"height":720}`),
		FinishedAt: e.clock.Now()})
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/tasks/" + task.ID)
	src := "https://media.example/signed/videos/" + task.ID + ".mp4?sig=abc"
	for _, want := range []string{`<video controls`, `src="` + src + `"`, `poster="https://media.example/signed/thumbs/` + task.ID + `.jpg?sig=abc"`,
		`<a href="` + src + `" download>Download</a>`, "1280x720", "0.12 USD"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("completed task page lacks %q\n%s", want, p.body)
		}
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' https://media.example") {
		t.Errorf("CSP %q does not allow the media origin", csp)
	}
	if ids, _ := listed(t, b.get("/console/?status=completed")); !slices.Equal(ids, []string{task.ID}) {
		t.Errorf("completed list: %v", ids)
	}
}

func TestStatusJSONTurnsTerminalWhenTheTaskEnds(t *testing.T) {
	e := newTasksEnv(t)
	task := e.create(t, e.keyID, fastBody)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	read := func() taskStatus {
		t.Helper()
		p := b.get("/console/tasks/" + task.ID + "/status.json")
		if p.status != http.StatusOK || !strings.HasPrefix(p.header.Get("Content-Type"), "application/json") {
			t.Fatalf("status.json: %d %s\n%s", p.status, p.header.Get("Content-Type"), p.body)
		}
		var s taskStatus
		if err := json.Unmarshal([]byte(p.body), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := read(); s.Terminal || s.Status != store.StatusQueued || s.ID != task.ID {
		t.Errorf("queued: %+v", s)
	}
	page := b.get("/console/tasks/" + task.ID)
	for _, want := range []string{`data-poll="/console/tasks/` + task.ID + `/status.json"`, `<progress id="task-progress" data-field="progress"`,
		`data-field="status"`, `>Refresh</a>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("running task page lacks %q", want)
		}
	}
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusInProgress, Step: "generate_poll", Progress: 55})
	if s := read(); s.Terminal || s.Status != store.StatusInProgress || s.Progress != 55 {
		t.Errorf("in progress: %+v", s)
	}
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusExpired, Step: "done", FinishedAt: e.clock.Now()})
	if s := read(); !s.Terminal || s.Status != store.StatusExpired {
		t.Errorf("expired: %+v", s)
	}
	if p := b.get("/console/tasks/" + task.ID); strings.Contains(p.body, "data-poll") {
		t.Error("a finished task's page still polls")
	}
	// Without a session the JSON is not served.
	anon := newBrowser(t, e.ts.URL)
	if p := anon.get("/console/tasks/" + task.ID + "/status.json"); p.status == http.StatusOK {
		t.Errorf("status.json without a session: %d", p.status)
	}
}

func TestTenantDataIsEscaped(t *testing.T) {
	e := newTasksEnv(t)
	task := e.create(t, e.keyID, `{"model":"demo-video-fast","prompt":"<script>alert(1)</script>",
		"metadata":{"duration":5,"resolution":"720p","client_request_id":"<script>alert(2)</script>"}}`)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/tasks/" + task.ID)
	if p.status != http.StatusOK {
		t.Fatalf("task page: %d", p.status)
	}
	if strings.Contains(p.body, "<script>alert") || !strings.Contains(p.body, "&lt;script&gt;alert(2)&lt;/script&gt;") {
		t.Errorf("client_request_id is not escaped:\n%s", p.body)
	}
	p = b.get("/console/?alias=" + url.QueryEscape(`"><script>alert(3)</script>`))
	if strings.Contains(p.body, "<script>alert") {
		t.Errorf("a filter value is not escaped:\n%s", p.body)
	}
}

func TestSpeechTabAndPage(t *testing.T) {
	e := newTasksEnv(t)
	otherID, _ := e.otherKey(t)
	ctx := context.Background()
	mk := func(id, keyID, crid string, status string) {
		t.Helper()
		e.clock.Advance(time.Second)
		now := e.clock.Now()
		err := e.st.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateSpeech(ctx, store.Speech{ID: id, KeyID: keyID, TenantID: "demo", Model: "demo-speech", Status: store.SpeechPending,
				ClientRequestID: crid, PayloadHash: []byte(id), Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: 50_000,
				AttemptToken: "tok", AttemptUntil: now.Add(time.Minute), CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			switch status {
			case store.SpeechCompleted:
				return tx.FinishSpeech(ctx, store.SpeechFinish{ID: id, Token: "tok", Status: status, Charged: 30_000, FinishedAt: now,
					Result: []byte(`{"audio_key":"speech/` + id + `.mp3","content_type":"audio/mpeg","bytes":1000,"duration_us":2500000,"original_duration_us":2500000}`)})
			case store.SpeechFailed:
				return tx.FinishSpeech(ctx, store.SpeechFinish{ID: id, Token: "tok", Status: status, FinishedAt: now, ErrorKind: "upstream",
					ErrorCode: "speech_generation_failed", ErrorMessage: "The speech could not be generated.", ErrorDetail: "engine crashed: secret"})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("speech_done1", e.keyID, "<script>x</script>", store.SpeechCompleted)
	mk("speech_fail1", e.keyID, "", store.SpeechFailed)
	mk("speech_theirs", otherID, "", store.SpeechCompleted)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/?kind=speech")
	speechLink := regexp.MustCompile(`href="/console/speech/([^"]+)"`)
	var ids []string
	for _, m := range speechLink.FindAllStringSubmatch(p.body, -1) {
		ids = append(ids, m[1])
	}
	if p.status != 200 || !slices.Equal(ids, []string{"speech_fail1", "speech_done1"}) {
		t.Fatalf("speech tab: %d %v\n%s", p.status, ids, p.body)
	}
	if ids, _ := listed(t, p); len(ids) != 0 {
		t.Errorf("the speech tab lists video tasks %v", ids)
	}
	p = b.get("/console/?kind=speech&status=failed")
	if !strings.Contains(p.body, "speech_fail1") || strings.Contains(p.body, "speech_done1") {
		t.Errorf("speech status filter:\n%s", p.body)
	}
	p = b.get("/console/speech/speech_done1")
	for _, want := range []string{`<audio controls`, `src="https://media.example/signed/speech/speech_done1.mp3?sig=abc"`, "2.500 s", "&lt;script&gt;x&lt;/script&gt;", "Accepted"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("speech page lacks %q\n%s", want, p.body)
		}
	}
	p = b.get("/console/speech/speech_fail1")
	if !strings.Contains(p.body, "speech_generation_failed") || strings.Contains(p.body, "engine crashed") || strings.Contains(p.body, "<audio") {
		t.Errorf("failed speech page:\n%s", p.body)
	}
	if p := b.get("/console/speech/speech_theirs"); p.status != http.StatusNotFound {
		t.Errorf("another key's speech record: %d; want 404", p.status)
	}
}
