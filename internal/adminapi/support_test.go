package adminapi

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/admin"
	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

var fixtureSeq atomic.Int64

// fixtureBase spaces fixtures 10 s apart in creation time, so their order is known.
var fixtureBase = time.Now().UTC().Truncate(time.Second).Add(-time.Hour)

// supportFixture is a task that failed after a failed attempt, a task that completed above its
// reservation with upstream excess, a failed speech record and a processing asset, all of
// tenant demo, written the way the services write them.
type supportFixture struct {
	keyID                string
	failed, completed    string
	failedDetail         string
	speech, asset, group string
	created              time.Time
}

func newSupportFixture(t *testing.T, e *env) supportFixture {
	t.Helper()
	ctx := context.Background()
	n := fixtureSeq.Add(1)
	keyID := e.makeKey(true)
	key, err := e.st.Key(ctx, keyID)
	if err != nil {
		t.Fatal(err)
	}
	f := supportFixture{keyID: keyID, failedDetail: "ark-main gen job ended failed: code \"OutputVideoSensitiveContentDetected\"",
		created: fixtureBase.Add(time.Duration(n) * 10 * time.Second)}
	f.failed, f.completed = fmt.Sprintf("video_supportfail%d", n), fmt.Sprintf("video_supportdone%d", n)
	newTask := func(id string, at time.Time) store.Task {
		return store.Task{ID: id, KeyID: f.keyID, TenantID: "demo", Route: "native", Model: "demo-video-fast", Status: store.StatusQueued,
			PayloadHash: []byte{1}, Request: []byte(`{"upstream":"ark-main","upstream_model":"seedance-1-0-pro"}`),
			Pricing: []byte(`{"currency":"USD"}`), Reserved: 1_000_000, CreatedAt: at, UpdatedAt: at}
	}
	for _, task := range []store.Task{newTask(f.failed, f.created), newTask(f.completed, f.created.Add(time.Second))} {
		err := e.st.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			if err := tx.EnqueueJob(ctx, store.Job{ID: "video.task:" + task.ID, Kind: "video.task", Ref: task.ID, TenantID: "demo",
				KeyID: f.keyID, RunAt: task.CreatedAt, CreatedAt: task.CreatedAt}); err != nil {
				return err
			}
			return billing.Reserve(ctx, tx, keys.Caller{Key: key}, task.ID, task.Reserved, task.CreatedAt)
		})
		if err != nil {
			t.Fatal(err)
		}
		job := "cgt-" + task.ID
		for _, a := range []store.Advance{
			{ID: task.ID, Status: store.StatusInProgress, Step: "gen_submit", Attempt: 1, Upstream: "ark-main"},
			{ID: task.ID, Status: store.StatusInProgress, Step: "gen_poll", Attempt: 1, Upstream: "ark-main", UpstreamJob: job,
				State: []byte(`{"gen_job":"` + job + `"}`)},
		} {
			if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		return tx.AppendTaskEvent(ctx, store.TaskEvent{TaskID: f.failed, At: time.Now(), Attempt: 2, Detail: "attempt 2 failed: upstream: 503 Service Unavailable"})
	}); err != nil {
		t.Fatal(err)
	}
	finish := func(id string, status string, charge money.Micros, detail string, excess bool) {
		t.Helper()
		err := e.st.Transact(ctx, func(tx store.Tx) error {
			a := store.Advance{ID: id, Status: status, Step: "done", Attempt: 3, Upstream: "ark-main", UpstreamJob: "cgt-" + id,
				State: []byte(`{"gen_job":"cgt-` + id + `"}`), Charged: charge, FinishedAt: time.Now(), Detail: detail}
			if status == store.StatusFailed {
				a.ErrorCode, a.ErrorMessage = "video_generation_failed", "The video could not be generated."
			}
			if err := tx.AdvanceTask(ctx, a); err != nil {
				return err
			}
			if _, err := billing.Settle(ctx, tx, f.keyID, id, 1_000_000, charge, time.Now()); err != nil {
				return err
			}
			if !excess {
				return nil
			}
			return tx.RecordUpstreamExcess(ctx, store.UpstreamExcess{ID: "uex_" + id, Upstream: "ark-main", Route: "native", Ref: id,
				KeyID: f.keyID, TenantID: "demo", Kind: "duration", Claimed: 3_000_000, Charged: charge, Amount: 1_750_000,
				Currency: "USD", Detail: "12.000 s cut to 5.000 s", CreatedAt: time.Now()})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	finish(f.failed, store.StatusFailed, 0, f.failedDetail, false)
	finish(f.completed, store.StatusCompleted, 1_250_000, "", true)

	f.speech = fmt.Sprintf("speech_support%d", n)
	sp := store.Speech{ID: f.speech, KeyID: f.keyID, TenantID: "demo", Model: "demo-speech", Status: store.SpeechPending,
		PayloadHash: []byte{2}, Request: []byte(`{"model":"demo-speech","text":"hi","mode":"text","upstream":"openai-main","upstream_model":"gpt-4o-mini-tts"}`),
		Pricing: []byte(`{"currency":"USD"}`), Reserved: 200, AttemptToken: "att_1", AttemptUntil: f.created.Add(time.Minute),
		CreatedAt: f.created, UpdatedAt: f.created}
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateSpeech(ctx, sp); err != nil {
			return err
		}
		if err := billing.Reserve(ctx, tx, keys.Caller{Key: key}, sp.ID, sp.Reserved, f.created); err != nil {
			return err
		}
		if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: sp.ID, Token: "att_1", Status: store.SpeechFailed, ErrorKind: "upstream",
			ErrorCode: "speech_generation_failed", ErrorMessage: "The speech could not be generated.",
			ErrorDetail: "upstream: openai-main: 500 Internal Server Error", FinishedAt: time.Now()}); err != nil {
			return err
		}
		_, err := billing.Settle(ctx, tx, f.keyID, sp.ID, sp.Reserved, 0, time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}

	g, gerr := e.svc.GrantGroup(ctx, admin.CLIActor("t"), admin.GroupInput{Tenant: "demo", Name: "support"})
	if gerr != nil {
		t.Fatal(gerr)
	}
	f.group, f.asset = g.ID, fmt.Sprintf("asset_support%d", n)
	as := store.Asset{ID: f.asset, TenantID: "demo", KeyID: f.keyID, GroupID: g.ID, Library: store.LibraryVirtual, Name: "a", Type: "Image",
		SourceURL: "https://cdn.example.com/a.png", Status: store.AssetProcessing, CreatedAt: f.created, UpdatedAt: f.created}
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateAsset(ctx, as); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, store.Job{ID: "asset.ingest:" + as.ID, Kind: "asset.ingest", Ref: as.ID, TenantID: "demo",
			KeyID: f.keyID, RunAt: f.created, CreatedAt: f.created})
	}); err != nil {
		t.Fatal(err)
	}
	return f
}

// supportSweep is one successful request of each support operation, for
// TestTrafficMatchesAdminOpenAPI.
func supportSweep(t *testing.T, e *env) {
	t.Helper()
	f := newSupportFixture(t, e)
	for _, path := range []string{
		"/admin/v1/tasks/" + f.failed,
		"/admin/v1/tasks/" + f.completed,
		"/admin/v1/tasks?tenant=demo&status=failed&alias=demo-video-fast&route=native&since=2000-01-01T00:00:00Z&limit=1",
		"/admin/v1/tasks?limit=1",
		"/admin/v1/tasks?status=done",
		"/admin/v1/tasks/video_nothing",
		"/admin/v1/speech/" + f.speech,
		"/admin/v1/speech?key=" + f.keyID + "&status=failed&order=asc",
		"/admin/v1/assets/" + f.asset,
		"/admin/v1/assets?group=" + f.group + "&status=Processing",
	} {
		e.do("GET", path, e.viewer, "", "")
	}
}

func decodeInto(t *testing.T, r resp, v any) {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
}

func TestSupportTaskLookupShowsTheWholeStory(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		f := newSupportFixture(t, e)
		var d admin.TaskDetail
		decodeInto(t, e.do("GET", "/admin/v1/tasks/"+f.failed, e.viewer, "", ""), &d)
		if d.ID != f.failed || d.Tenant != "demo" || d.KeyID != f.keyID || d.KeyName != "fixture" || d.Alias != "demo-video-fast" ||
			d.Route != "native" || d.Status != store.StatusFailed || d.FinishedAt.IsZero() {
			t.Errorf("task fields: %+v", d)
		}
		if d.Upstream.Account != "ark-main" || d.Upstream.Model != "seedance-1-0-pro" || d.Upstream.Job != "cgt-"+f.failed {
			t.Errorf("upstream: %+v", d.Upstream)
		}
		if d.Error == nil || d.Error.Code != "video_generation_failed" || d.InternalError != f.failedDetail {
			t.Errorf("error %+v, internal %q", d.Error, d.InternalError)
		}
		type ev struct {
			from, to, step string
			attempt        int
			job, detail    string
		}
		var got []ev
		for i, x := range d.Events {
			got = append(got, ev{x.From, x.To, x.Step, x.Attempt, x.UpstreamJob, x.Detail})
			if x.Seq != i || x.At.IsZero() || (i > 0 && x.At.Before(d.Events[i-1].At)) {
				t.Errorf("event %d: seq %d at %v", i, x.Seq, x.At)
			}
		}
		want := []ev{
			{"", "queued", "", 0, "", ""},
			{"queued", "in_progress", "gen_submit", 1, "", ""},
			{"in_progress", "in_progress", "gen_poll", 1, "cgt-" + f.failed, ""},
			{"in_progress", "in_progress", "gen_poll", 2, "", "attempt 2 failed: upstream: 503 Service Unavailable"},
			{"in_progress", "failed", "done", 3, "cgt-" + f.failed, f.failedDetail},
		}
		if !slices.Equal(got, want) {
			t.Errorf("events:\n got %+v\nwant %+v", got, want)
		}
		m := d.Money
		if m.Currency != "USD" || m.Reserved != 1_000_000 || m.Charged != 0 || m.Overage != 0 ||
			m.Reservation == nil || m.Reservation.Kind != "reserve" || m.Reservation.Amount != 1_000_000 ||
			m.Settlement == nil || m.Settlement.Kind != "release" || m.Settlement.Amount != 0 || m.OverageTxn != nil {
			t.Errorf("money: %+v", m)
		}
		if len(d.Ledger) != 2 || d.Ledger[0].ID != m.Reservation.ID || d.Ledger[1].ID != m.Settlement.ID {
			t.Errorf("ledger %+v does not hold the reservation and the settlement", d.Ledger)
		}
		if len(d.Jobs) != 1 || d.Jobs[0].ID != "video.task:"+f.failed {
			t.Errorf("jobs: %+v", d.Jobs)
		}

		var c admin.TaskDetail
		decodeInto(t, e.do("GET", "/admin/v1/tasks/"+f.completed, e.viewer, "", ""), &c)
		cm := c.Money
		if c.Status != store.StatusCompleted || c.InternalError != "" || c.Error != nil ||
			cm.Charged != 1_250_000 || cm.Overage != 250_000 || cm.Settlement == nil || cm.Settlement.Kind != "settle" ||
			cm.Settlement.Amount != 1_000_000 || cm.OverageTxn == nil || cm.OverageTxn.Amount != 250_000 || len(c.Ledger) != 3 {
			t.Errorf("completed task money: %+v ledger %+v", cm, c.Ledger)
		}
		if len(c.Excess) != 1 || c.Excess[0].ID != "uex_"+f.completed || c.Excess[0].Amount != 1_750_000 {
			t.Errorf("excess: %+v", c.Excess)
		}

		code, _ := e.do("GET", "/admin/v1/tasks/video_unknown", e.viewer, "", "").errCodeParam(t)
		if code != "not_found" {
			t.Errorf("unknown task: %s", code)
		}
		if r := e.do("GET", "/admin/v1/tasks/"+f.failed, "", "", ""); r.status != 401 {
			t.Errorf("no token: %d", r.status)
		}
		if r := e.do("GET", "/admin/v1/tasks/"+f.failed+"?x=1", e.viewer, "", ""); r.status != 400 {
			t.Errorf("unknown parameter: %d", r.status)
		}
	})
}

func TestSupportSpeechAndAssetLookups(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		f := newSupportFixture(t, e)
		var sp admin.SpeechDetail
		decodeInto(t, e.do("GET", "/admin/v1/speech/"+f.speech, e.viewer, "", ""), &sp)
		if sp.Status != store.SpeechFailed || sp.Upstream != "openai-main" || sp.UpstreamModel != "gpt-4o-mini-tts" ||
			sp.ErrorKind != "upstream" || sp.Error == nil || sp.InternalError != "upstream: openai-main: 500 Internal Server Error" || sp.Money.Reservation == nil || sp.Money.Settlement == nil ||
			sp.Money.Settlement.Kind != "release" || len(sp.Ledger) != 2 {
			t.Errorf("speech: %+v", sp)
		}
		var as admin.AssetDetail
		decodeInto(t, e.do("GET", "/admin/v1/assets/"+f.asset, e.viewer, "", ""), &as)
		if as.Status != store.AssetProcessing || as.GroupID != f.group || len(as.Jobs) != 1 || as.Jobs[0].Kind != "asset.ingest" {
			t.Errorf("asset: %+v", as)
		}
		for _, p := range []string{"/admin/v1/speech/speech_none", "/admin/v1/assets/asset_none"} {
			if code, _ := e.do("GET", p, e.viewer, "", "").errCodeParam(t); code != "not_found" {
				t.Errorf("%s: %s", p, code)
			}
		}
	})
}

func ids[T any](t *testing.T, r resp, id func(T) string) ([]string, admin.List[T]) {
	t.Helper()
	var l admin.List[T]
	decodeInto(t, r, &l)
	out := []string{}
	for _, x := range l.Data {
		out = append(out, id(x))
	}
	return out, l
}

func TestSupportSearchByEachFilter(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, e *env) {
		f := newSupportFixture(t, e)
		other := newSupportFixture(t, e)
		taskID := func(s admin.TaskSummary) string { return s.ID }
		newest := []string{other.completed, other.failed, f.completed, f.failed}
		since := url.QueryEscape(f.created.Add(time.Second).Format(time.RFC3339Nano))
		until := url.QueryEscape(other.created.Format(time.RFC3339Nano))
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"", newest},
			{"?order=asc", []string{f.failed, f.completed, other.failed, other.completed}},
			{"?tenant=demo", newest},
			{"?tenant=nobody", []string{}},
			{"?key=" + f.keyID, []string{f.completed, f.failed}},
			{"?status=failed", []string{other.failed, f.failed}},
			{"?alias=demo-video-fast&route=native", newest},
			{"?alias=other", []string{}},
			{"?route=production", []string{}},
			{"?upstream_job=cgt-" + f.completed, []string{f.completed}},
			{"?since=" + since + "&until=" + until, []string{f.completed}},
		} {
			got, _ := ids(t, e.do("GET", "/admin/v1/tasks"+tc.query, e.viewer, "", ""), taskID)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%q: %v, want %v", tc.query, got, tc.want)
			}
		}
		// Pages of one, by cursor.
		var all []string
		cursor := ""
		for range 10 {
			q := "?limit=1"
			if cursor != "" {
				q += "&cursor=" + cursor
			}
			got, l := ids(t, e.do("GET", "/admin/v1/tasks"+q, e.viewer, "", ""), taskID)
			all = append(all, got...)
			if !l.HasMore {
				break
			}
			cursor = l.NextCursor
		}
		if !slices.Equal(all, newest) {
			t.Errorf("paged: %v, want %v", all, newest)
		}
		sp, _ := ids(t, e.do("GET", "/admin/v1/speech?key="+f.keyID+"&status=failed", e.viewer, "", ""), func(s admin.SpeechSummary) string { return s.ID })
		if !slices.Equal(sp, []string{f.speech}) {
			t.Errorf("speech search: %v", sp)
		}
		as, _ := ids(t, e.do("GET", "/admin/v1/assets?group="+f.group+"&status=Processing&tenant=demo", e.viewer, "", ""), func(s admin.AssetSummary) string { return s.ID })
		if !slices.Equal(as, []string{f.asset}) {
			t.Errorf("asset search: %v", as)
		}
	})
}

func TestSupportBadFiltersAnswer400WithParam(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	for _, tc := range []struct{ path, param string }{
		{"/admin/v1/tasks?status=done", "status"},
		{"/admin/v1/tasks?route=fast", "route"},
		{"/admin/v1/tasks?limit=0", "limit"},
		{"/admin/v1/tasks?limit=501", "limit"},
		{"/admin/v1/tasks?limit=x", "limit"},
		{"/admin/v1/tasks?order=new", "order"},
		{"/admin/v1/tasks?since=yesterday", "since"},
		{"/admin/v1/tasks?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "until"},
		{"/admin/v1/tasks?cursor=%21%21", "cursor"},
		{"/admin/v1/tasks?cursor=bm90LWEtY3Vyc29y", "cursor"},
		{"/admin/v1/tasks?group=g", "group"},
		{"/admin/v1/tasks?tenant=" + url.QueryEscape("a\x01b"), "tenant"},
		{"/admin/v1/tasks?key=" + strings.Repeat("k", 300), "key"},
		{"/admin/v1/speech?status=queued", "status"},
		{"/admin/v1/speech?route=native", "route"},
		{"/admin/v1/assets?status=active", "status"},
		{"/admin/v1/assets?alias=x", "alias"},
	} {
		r := e.do("GET", tc.path, e.viewer, "", "")
		if r.status != 400 {
			t.Errorf("%s: %d %s", tc.path, r.status, r.body)
			continue
		}
		if _, param := r.errCodeParam(t); param != tc.param {
			t.Errorf("%s: param %q, want %q", tc.path, param, tc.param)
		}
	}
}
