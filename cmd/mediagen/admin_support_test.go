package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
)

// TestAdminTaskShowAndSearchCommands: `admin task show` prints a failed task's story (events,
// internal error, upstream job, ledger ids) and its JSON view; `admin task search` finds it by
// its filters and pages with --after; bad flags are usage errors naming the flag.
func TestAdminTaskShowAndSearchCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := adminAs(t, dir, "root", "key", "create", "--tenant", "demo", "--name", "support", "--unlimited")
	keyID := ""
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "key_") {
			keyID = f
			break
		}
	}
	if keyID == "" {
		t.Fatalf("no key id in %q", out)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "mediagen.db"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := db.Key(ctx, keyID)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	var ids []string
	for i, id := range []string{"video_clifail", "video_cliqueued"} {
		task := store.Task{ID: id, KeyID: keyID, TenantID: "demo", Route: "native", Model: "demo-video-fast", Status: store.StatusQueued,
			PayloadHash: []byte{1}, Request: []byte(`{"upstream":"sandbox","upstream_model":"sandbox-video"}`),
			Pricing: []byte(`{"currency":"USD"}`), Reserved: 500_000, CreatedAt: base.Add(time.Duration(i) * time.Minute), UpdatedAt: base}
		if err := db.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			return billing.Reserve(ctx, tx, keys.Caller{Key: key}, id, task.Reserved, task.CreatedAt)
		}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.AdvanceTask(ctx, store.Advance{ID: "video_clifail", Status: store.StatusFailed, Step: "done", Attempt: 2,
			Upstream: "sandbox", UpstreamJob: "sbx-job-77", State: []byte(`{"gen_job":"sbx-job-77"}`),
			ErrorCode: "video_generation_failed", ErrorMessage: "The video could not be generated.",
			Detail: "sandbox gen job ended failed: code \"boom\"", FinishedAt: time.Now()}); err != nil {
			return err
		}
		_, err := billing.Settle(ctx, tx, keyID, "video_clifail", 500_000, 0, time.Now())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	show := adminAs(t, dir, "root", "task", "show", "video_clifail")
	for _, want := range []string{"video_clifail", "demo-video-fast", "failed", "sbx-job-77", "sandbox (sandbox-video)",
		"internal error:", `sandbox gen job ended failed: code "boom"`, "reservation txn:", "settlement txn:", "release", "queued"} {
		if !strings.Contains(show, want) {
			t.Errorf("task show lacks %q:\n%s", want, show)
		}
	}
	var d opadmin.TaskDetail
	if err := json.Unmarshal([]byte(adminAs(t, dir, "root", "task", "show", "video_clifail", "--json")), &d); err != nil {
		t.Fatal(err)
	}
	if d.ID != "video_clifail" || len(d.Events) != 2 || d.Money.Reservation == nil || d.Money.Settlement == nil || d.InternalError == "" {
		t.Errorf("task show --json: %+v", d)
	}

	search := adminAs(t, dir, "root", "task", "search", "--tenant", "demo", "--status", "failed", "--since", "24h")
	if !strings.Contains(search, "video_clifail") || strings.Contains(search, "video_cliqueued") {
		t.Errorf("task search --status failed:\n%s", search)
	}
	if s := adminAs(t, dir, "root", "task", "search", "--upstream-job", "sbx-job-77"); !strings.Contains(s, "video_clifail") {
		t.Errorf("task search --upstream-job:\n%s", s)
	}
	first := adminAs(t, dir, "root", "task", "search", "--key", keyID, "--limit", "1")
	if !strings.Contains(first, ids[1]) || !strings.Contains(first, "more: --after ") {
		t.Fatalf("first page:\n%s", first)
	}
	cursor := strings.TrimSpace(first[strings.Index(first, "more: --after ")+len("more: --after "):])
	second := adminAs(t, dir, "root", "task", "search", "--key", keyID, "--limit", "1", "--after", cursor)
	if !strings.Contains(second, ids[0]) || strings.Contains(second, "more:") {
		t.Errorf("second page:\n%s", second)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "search", "--status", "done"}, "--status"},
		{[]string{"task", "search", "--limit", "501"}, "--limit"},
		{[]string{"task", "search", "--after", "garbage!"}, "--after"},
		{[]string{"task", "search", "--since", "yesterday"}, "--since"},
		{[]string{"speech", "search", "--status", "queued"}, "--status"},
		{[]string{"asset", "search", "--status", "nope"}, "--status"},
		{[]string{"task", "show", "video_unknown"}, "No task"},
	} {
		var o, e bytes.Buffer
		err := run(ctx, append(append([]string{"admin"}, bad.args...), "--data-dir", dir), env(map[string]string{"USER": "root"}), &o, &e)
		if err == nil || !strings.Contains(err.Error()+e.String(), bad.want) {
			t.Errorf("%v: %v %s, want an error naming %s", bad.args, err, e.String(), bad.want)
		}
	}
	// Speech and asset commands run on an empty library.
	if s := adminAs(t, dir, "root", "speech", "search", "--tenant", "demo"); !strings.Contains(s, "ID") {
		t.Errorf("speech search:\n%s", s)
	}
	if s := adminAs(t, dir, "root", "asset", "search", "--tenant", "demo", "--json"); !strings.Contains(s, `"object": "list"`) {
		t.Errorf("asset search --json:\n%s", s)
	}
}
