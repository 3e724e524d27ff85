package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

// testTaskEventsRecordEveryChange: a task's history holds its acceptance, each change of
// status or step with its attempt and upstream job, each failed attempt, and its end with
// the internal reason, in order; progress-only updates and writes to a finished task add
// nothing. The ledger transactions and the job about the task are read back with it.
func testTaskEventsRecordEveryChange(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", true)
	task := newTask(k, "")
	job := store.Job{ID: "video.task:" + task.ID, Kind: "video.task", Ref: task.ID, TenantID: k.TenantID, KeyID: k.ID,
		RunAt: task.CreatedAt, CreatedAt: task.CreatedAt}
	reserveTxn := store.Txn{ID: "txn_res_" + task.ID, Kind: "reserve", Ref: task.ID, Entries: []store.Entry{
		{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -1234},
		{Account: store.AccountID(k.ID, store.AccountReserved), Amount: 1234}}}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, job); err != nil {
			return err
		}
		return tx.Post(ctx, reserveTxn)
	}); err != nil {
		t.Fatal(err)
	}
	advance := func(a store.Advance) error {
		return s.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) })
	}
	steps := []store.Advance{
		{ID: task.ID, Status: store.StatusInProgress, Progress: 1, Step: "gen_submit", Attempt: 1, Upstream: "ark-main"},
		// Progress alone: no event.
		{ID: task.ID, Status: store.StatusInProgress, Progress: 2, Step: "gen_submit", Attempt: 1, Upstream: "ark-main"},
		{ID: task.ID, Status: store.StatusInProgress, Progress: 3, Step: "gen_poll", Attempt: 1, Upstream: "ark-main", UpstreamJob: "cgt-123"},
	}
	for _, a := range steps {
		if err := advance(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.AppendTaskEvent(ctx, store.TaskEvent{TaskID: task.ID, At: time.Now(), Attempt: 2, Detail: "attempt 2 failed: upstream: 503"})
	}); err != nil {
		t.Fatal(err)
	}
	final := store.Advance{ID: task.ID, Status: store.StatusFailed, Progress: 3, Step: "done", Attempt: 3, Upstream: "ark-main",
		UpstreamJob: "cgt-123", ErrorCode: "video_generation_failed", ErrorMessage: "The video could not be generated.",
		Detail: "ark-main gen job ended failed: code \"OutputVideoSensitiveContentDetected\"", FinishedAt: time.Now()}
	settleTxn := store.Txn{ID: "txn_set_" + task.ID, Kind: "release", Ref: task.ID, Entries: []store.Entry{
		{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -1234},
		{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: 1234}}}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.AdvanceTask(ctx, final); err != nil {
			return err
		}
		return tx.Post(ctx, settleTxn)
	}); err != nil {
		t.Fatal(err)
	}
	// A write after the end is fenced and leaves no event.
	late := store.Advance{ID: task.ID, Status: store.StatusInProgress, Step: "gen_poll", Attempt: 4}
	if err := advance(late); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("advance after the end: %v, want ErrLeaseLost", err)
	}
	// An event for a task that does not exist writes nothing and fails nothing.
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.AppendTaskEvent(ctx, store.TaskEvent{TaskID: "vid_missing", At: time.Now(), Detail: "x"})
	}); err != nil {
		t.Fatal(err)
	}

	events, err := s.TaskEvents(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		seq                   int
		from, to, step        string
		attempt               int
		upstream, job, detail string
	}
	var got []row
	for i, e := range events {
		got = append(got, row{e.Seq, e.From, e.To, e.Step, e.Attempt, e.Upstream, e.UpstreamJob, e.Detail})
		if e.At.IsZero() || (i > 0 && e.At.Before(events[i-1].At)) {
			t.Errorf("event %d at %v: times must be set and in order", i, e.At)
		}
	}
	want := []row{
		{0, "", "queued", "", 0, "", "", ""},
		{1, "queued", "in_progress", "gen_submit", 1, "ark-main", "", ""},
		{2, "in_progress", "in_progress", "gen_poll", 1, "ark-main", "cgt-123", ""},
		{3, "in_progress", "in_progress", "gen_poll", 2, "", "", "attempt 2 failed: upstream: 503"},
		{4, "in_progress", "failed", "done", 3, "ark-main", "cgt-123", final.Detail},
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %+v\nwant %+v", got, want)
	}
	if none, err := s.TaskEvents(ctx, "vid_missing"); err != nil || len(none) != 0 {
		t.Errorf("events of a missing task: %v %v", none, err)
	}

	txns, err := s.LedgerTxns(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(txns) != 2 || txns[0].ID != reserveTxn.ID || txns[1].ID != settleTxn.ID || txns[0].Kind != "reserve" ||
		len(txns[0].Entries) != 2 || len(txns[1].Entries) != 2 || txns[0].CreatedAt.IsZero() {
		t.Fatalf("ledger of the task: %+v", txns)
	}
	for _, txn := range txns {
		var sum int64
		for _, e := range txn.Entries {
			sum += int64(e.Amount)
		}
		if sum != 0 {
			t.Errorf("txn %s entries sum to %d", txn.ID, sum)
		}
	}
	jobs, err := s.Jobs(ctx, []string{job.ID, "video.task:vid_missing"})
	if err != nil || len(jobs) != 1 || jobs[0].ID != job.ID || jobs[0].Ref != task.ID || jobs[0].Kind != "video.task" {
		t.Fatalf("jobs of the task: %+v %v", jobs, err)
	}
}

// supportTask creates a task with the given fields at the given time, and its events.
func supportTask(t *testing.T, s store.Store, k store.Key, status, model, route string, at time.Time) store.Task {
	t.Helper()
	ctx := t.Context()
	task := newTask(k, "")
	task.Model, task.Route, task.CreatedAt, task.UpdatedAt = model, route, at, at
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
		t.Fatal(err)
	}
	if status != store.StatusQueued {
		a := store.Advance{ID: task.ID, Status: status, Step: "x", Upstream: "ark-main", UpstreamJob: "job-" + task.ID}
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) }); err != nil {
			t.Fatal(err)
		}
	}
	return task
}

func taskIDs(ts []store.Task) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// testSearchTasksByEachFilter: every filter narrows to exactly its tasks, newest first (or
// oldest first), and the limit is bounded.
func testSearchTasksByEachFilter(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a1 := newKey(t, s, "acme", true)
	a2 := newKey(t, s, "acme", true)
	b1 := newKey(t, s, "beta", true)
	t0 := supportTask(t, s, a1, store.StatusQueued, "fast", "native", base)
	t1 := supportTask(t, s, a1, store.StatusInProgress, "pro", "production", base.Add(1*time.Hour))
	t2 := supportTask(t, s, a2, store.StatusFailed, "fast", "native", base.Add(2*time.Hour))
	t3 := supportTask(t, s, b1, store.StatusCompleted, "fast", "enhancement", base.Add(3*time.Hour))
	t4 := supportTask(t, s, b1, store.StatusQueued, "fast", "native", base.Add(3*time.Hour)) // same time: id breaks the tie
	newest := []string{t4.ID, t3.ID, t2.ID, t1.ID, t0.ID}
	if t4.ID < t3.ID {
		newest[0], newest[1] = t3.ID, t4.ID
	}
	for _, tc := range []struct {
		name string
		f    store.TaskFilter
		want []string
	}{
		{"everything newest first", store.TaskFilter{}, newest},
		{"everything oldest first", store.TaskFilter{Page: store.Page{Asc: true}}, reversed(newest)},
		{"tenant", store.TaskFilter{TenantID: "acme"}, []string{t2.ID, t1.ID, t0.ID}},
		{"key", store.TaskFilter{KeyID: a1.ID}, []string{t1.ID, t0.ID}},
		{"status", store.TaskFilter{Status: store.StatusQueued}, without(newest, t1.ID, t2.ID, t3.ID)},
		{"alias", store.TaskFilter{Model: "pro"}, []string{t1.ID}},
		{"route", store.TaskFilter{Route: "native"}, without(newest, t1.ID, t3.ID)},
		{"created from", store.TaskFilter{CreatedFrom: base.Add(2 * time.Hour)}, newest[:3]},
		{"created before", store.TaskFilter{CreatedTo: base.Add(2 * time.Hour)}, []string{t1.ID, t0.ID}},
		{"created range", store.TaskFilter{CreatedFrom: base.Add(time.Hour), CreatedTo: base.Add(3 * time.Hour)}, []string{t2.ID, t1.ID}},
		{"upstream job", store.TaskFilter{UpstreamJob: "job-" + t2.ID}, []string{t2.ID}},
		{"unknown upstream job", store.TaskFilter{UpstreamJob: "nope"}, []string{}},
		{"filters combine", store.TaskFilter{TenantID: "beta", Status: store.StatusCompleted}, []string{t3.ID}},
		{"limit", store.TaskFilter{Page: store.Page{Limit: 2}}, newest[:2]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.SearchTasks(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(taskIDs(got), tc.want) {
				t.Errorf("got %v, want %v", taskIDs(got), tc.want)
			}
			for _, g := range got {
				if len(g.Request) != 0 || g.TenantID == "" || g.CreatedAt.IsZero() {
					t.Errorf("row %+v: want the read columns only, filled", g)
				}
			}
		})
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func without(s []string, drop ...string) []string {
	out := []string{}
	for _, v := range s {
		if !slices.Contains(drop, v) {
			out = append(out, v)
		}
	}
	return out
}

// testSearchTasksPagesEachOnceUnderInserts: paging newest first through a key's tasks while
// other tasks are created concurrently returns every task that existed when paging began
// exactly once, and never a task twice.
func testSearchTasksPagesEachOnceUnderInserts(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", true)
	base := time.Now().UTC().Add(-time.Hour)
	var before []string
	for i := range 40 {
		// Pairs share a creation time, so the id tiebreak is crossed by page boundaries.
		before = append(before, supportTask(t, s, k, store.StatusQueued, "fast", "native", base.Add(time.Duration(i/2)*time.Second)).ID)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 { // bounded
			select {
			case <-stop:
				return
			default:
			}
			task := newTask(k, "")
			task.CreatedAt = time.Now().UTC().Add(time.Duration(i) * time.Microsecond)
			_ = s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) })
		}
	}()
	seen := map[string]int{}
	p := store.Page{Limit: 7}
	for pages := 0; pages < 100; pages++ {
		got, err := s.SearchTasks(ctx, store.TaskFilter{KeyID: k.ID, Page: p})
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		for _, g := range got {
			seen[g.ID]++
		}
		if len(got) < p.Limit {
			break
		}
		last := got[len(got)-1]
		p.AfterAt, p.AfterID = last.CreatedAt, last.ID
	}
	close(stop)
	wg.Wait()
	for _, id := range before {
		if seen[id] != 1 {
			t.Errorf("task %s seen %d times, want once", id, seen[id])
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("task %s seen %d times", id, n)
		}
	}
}

// testSearchSpeechesAndAssets: speech records and assets are found by their filters, newest
// first, and paged by cursor.
func testSearchSpeechesAndAssets(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	k1 := newKey(t, s, "acme", true)
	k2 := newKey(t, s, "beta", true)
	var speeches []store.Speech
	for i, k := range []store.Key{k1, k1, k2} {
		sp := newSpeech(k, "", base.Add(time.Hour))
		sp.CreatedAt = base.Add(time.Duration(i) * time.Minute)
		createSpeech(t, s, sp)
		speeches = append(speeches, sp)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.FinishSpeech(ctx, store.SpeechFinish{ID: speeches[0].ID, Token: speeches[0].AttemptToken, Status: store.SpeechFailed,
			ErrorKind: "upstream", ErrorCode: "speech_failed", ErrorMessage: "x", ErrorDetail: "openai-main: 500 engine exploded",
			FinishedAt: base.Add(time.Hour)})
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Speech(ctx, speeches[0].ID); err != nil || got.ErrorDetail != "openai-main: 500 engine exploded" || got.ErrorMessage != "x" {
		t.Errorf("failed speech read back: %+v %v", got, err)
	}
	spIDs := func(f store.SpeechFilter) []string {
		t.Helper()
		got, err := s.SearchSpeeches(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, g := range got {
			out = append(out, g.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.SpeechFilter
		want []string
	}{
		{"all", store.SpeechFilter{}, []string{speeches[2].ID, speeches[1].ID, speeches[0].ID}},
		{"tenant", store.SpeechFilter{TenantID: "acme"}, []string{speeches[1].ID, speeches[0].ID}},
		{"key", store.SpeechFilter{KeyID: k2.ID}, []string{speeches[2].ID}},
		{"status", store.SpeechFilter{Status: store.SpeechFailed}, []string{speeches[0].ID}},
		{"created range", store.SpeechFilter{CreatedFrom: base.Add(time.Minute), CreatedTo: base.Add(2 * time.Minute)}, []string{speeches[1].ID}},
		{"after cursor", store.SpeechFilter{Page: store.Page{AfterAt: speeches[1].CreatedAt, AfterID: speeches[1].ID}}, []string{speeches[0].ID}},
	} {
		if got := spIDs(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("speech %s: got %v, want %v", tc.name, got, tc.want)
		}
	}

	g1 := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, base)
	g2 := newGroup(t, s, "beta", store.LibraryVirtual, store.GroupOriginTenant, base)
	var assets []store.Asset
	for i, g := range []store.AssetGroup{g1, g1, g2} {
		assets = append(assets, newAsset(t, s, g, "Image", base.Add(time.Duration(i)*time.Minute)))
	}
	if err := finishAsset(s, store.AssetOutcome{ID: assets[1].ID, Status: store.AssetFailed, FailureCode: "x", FailureReason: "y", At: base.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	asIDs := func(f store.AssetFilter) []string {
		t.Helper()
		got, err := s.SearchAssets(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, g := range got {
			out = append(out, g.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.AssetFilter
		want []string
	}{
		{"all", store.AssetFilter{}, []string{assets[2].ID, assets[1].ID, assets[0].ID}},
		{"tenant", store.AssetFilter{TenantID: "acme"}, []string{assets[1].ID, assets[0].ID}},
		{"group", store.AssetFilter{GroupID: g2.ID}, []string{assets[2].ID}},
		{"status", store.AssetFilter{Status: store.AssetFailed}, []string{assets[1].ID}},
		{"oldest first, limit", store.AssetFilter{Page: store.Page{Asc: true, Limit: 2}}, []string{assets[0].ID, assets[1].ID}},
	} {
		if got := asIDs(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("asset %s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// testKeyLedger: a key's ledger is its latest transactions on any of its accounts, newest
// first, each with all its entries; another key's transactions are not in it.
func testKeyLedger(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", true)
	other := newKey(t, s, "acme", true)
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	post := func(id, kind string, at time.Time, entries ...store.Entry) {
		t.Helper()
		if err := s.Transact(ctx, func(tx store.Tx) error {
			return tx.Post(ctx, store.Txn{ID: id, Kind: kind, Ref: "ref_" + id, CreatedAt: at, Entries: entries, AllowOverdraft: true})
		}); err != nil {
			t.Fatal(err)
		}
	}
	avail, res, spent := store.AccountID(k.ID, store.AccountAvailable), store.AccountID(k.ID, store.AccountReserved), store.AccountID(k.ID, store.AccountSpent)
	post("txn_kl1_"+k.ID, "credit", base, store.Entry{Account: store.FundingAccountID("USD"), Amount: -500}, store.Entry{Account: avail, Amount: 500})
	post("txn_kl2_"+k.ID, "reserve", base.Add(time.Minute), store.Entry{Account: avail, Amount: -100}, store.Entry{Account: res, Amount: 100})
	post("txn_kl3_"+k.ID, "settle", base.Add(2*time.Minute), store.Entry{Account: res, Amount: -100}, store.Entry{Account: spent, Amount: 100})
	post("txn_kl4_"+other.ID, "credit", base.Add(3*time.Minute), store.Entry{Account: store.FundingAccountID("USD"), Amount: -7},
		store.Entry{Account: store.AccountID(other.ID, store.AccountAvailable), Amount: 7})

	got, err := s.KeyLedger(ctx, k.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "txn_kl3_"+k.ID || got[1].ID != "txn_kl2_"+k.ID {
		t.Fatalf("latest 2: %+v; want the settle then the reserve", got)
	}
	if len(got[0].Entries) != 2 || got[0].Kind != "settle" || got[0].Ref != "ref_txn_kl3_"+k.ID {
		t.Errorf("settle read back as %+v", got[0])
	}
	all, err := s.KeyLedger(ctx, k.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[2].ID != "txn_kl1_"+k.ID {
		t.Errorf("all: %+v; want the key's 3 transactions", all)
	}
}
