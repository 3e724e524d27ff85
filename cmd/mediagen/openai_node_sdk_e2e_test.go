package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeSDK gives the directory whose node_modules holds the OpenAI Node SDK pinned by
// test/node-sdk/package-lock.json: MEDIAGEN_TEST_NODE_SDK when make test set it, else what
// scripts/ensure-node-sdk.sh installs. Under CI=true a missing Node.js or SDK fails the test;
// elsewhere the test skips when node or npm is not on the machine, rather than installing them.
func nodeSDK(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("MEDIAGEN_TEST_NODE_SDK"); dir != "" {
		return dir
	}
	ci := os.Getenv("CI") == "true"
	if !ci {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not on PATH (scripts/ensure-node-sdk.sh installs it)", tool)
			}
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "ensure-node-sdk.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ci {
			t.Fatalf("Node SDK required under CI=true: %v\n%s", err, stderr.Bytes())
		}
		t.Skipf("Node SDK not installed: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// nodeVideo is the part of the SDK's Video object the test reads.
type nodeVideo struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Model       string `json:"model"`
	Status      string `json:"status"`
	Progress    int    `json:"progress"`
	Seconds     string `json:"seconds"`
	Size        string `json:"size"`
	CompletedAt int64  `json:"completed_at"`
	ExpiresAt   *int64 `json:"expires_at"`
	DeletedAt   *int64 `json:"deleted_at"`
}

type nodeAPIError struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Code   string `json:"code"`
	Param  string `json:"param"`
}

type nodeDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// The official OpenAI Node SDK, at the exact version test/node-sdk pins, as a real client of a
// started service with the sandbox engine: test/node-sdk/videos.mjs creates a task in OpenAI's
// shape, polls it, retrieves it, lists with auto-pagination one per page, saves
// downloadContent to a file (the 302 to the signed link, followed by Node's fetch), deletes
// twice, reads the task and its content after the delete, and repeats a create with one
// Idempotency-Key (one task) and reuses the key for another prompt (409).
func TestOpenAINodeSDKCreatesListsDownloadsAndDeletes(t *testing.T) {
	t.Parallel()
	sdkDir := nodeSDK(t)
	e := startE2E(t)
	// A task made through the contract's JSON first, so the listing has two pages.
	first := e.create(`{"model":"demo-video-fast","prompt":"before the node sdk","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	e.wait(first)

	// The script runs from a directory whose node_modules is the cached install, so its
	// `import 'openai'` resolves to the pinned SDK.
	work := t.TempDir()
	script, err := os.ReadFile(filepath.Join("..", "..", "test", "node-sdk", "videos.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "videos.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sdkDir, "node_modules"), filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "videos.mjs", work)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "BASE_URL="+e.baseURL()+"/v1", "API_KEY="+e.key)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node videos.mjs: %v\n%s", err, stderr.Bytes())
	}

	var got struct {
		Created             nodeVideo    `json:"created"`
		CreateAndPoll       *nodeVideo   `json:"create_and_poll"`
		Polled              nodeVideo    `json:"polled"`
		Retrieved           nodeVideo    `json:"retrieved"`
		Listed              []string     `json:"listed"`
		ContentStatus       int          `json:"content_status"`
		ContentFile         string       `json:"content_file"`
		ContentBytes        int          `json:"content_bytes"`
		Deleted             nodeDeleted  `json:"deleted"`
		DeletedAgain        nodeDeleted  `json:"deleted_again"`
		AfterDelete         nodeVideo    `json:"after_delete"`
		ContentAfterDelete  nodeAPIError `json:"content_after_delete"`
		Idempotent          []string     `json:"idempotent"`
		IdempotencyConflict nodeAPIError `json:"idempotency_conflict"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output: %v\n%s", err, out)
	}
	c := got.Created
	if c.ID == "" || c.Object != "video" || c.Model != "demo-video-fast" || c.Status != "queued" {
		t.Fatalf("create: %+v", c)
	}
	if got.CreateAndPoll != nil && got.CreateAndPoll.Status != "completed" {
		t.Errorf("createAndPoll: %+v", got.CreateAndPoll)
	}
	if p := got.Polled; p.ID != c.ID || p.Status != "completed" || p.Progress != 100 {
		t.Fatalf("polled: %+v", p)
	}
	if r := got.Retrieved; r.ID != c.ID || r.Status != "completed" || r.Seconds != "4" || r.Size != "1280x720" ||
		r.CompletedAt == 0 || r.ExpiresAt == nil || *r.ExpiresAt <= r.CompletedAt {
		t.Fatalf("retrieve: %+v", r)
	}
	// Newest first, every task once, across pages of one.
	want := []string{c.ID, first}
	if got.CreateAndPoll != nil {
		want = []string{got.CreateAndPoll.ID, c.ID, first}
	}
	if strings.Join(got.Listed, ",") != strings.Join(want, ",") {
		t.Fatalf("list with auto-pagination: %v, want %v", got.Listed, want)
	}
	if got.ContentStatus != 200 || got.ContentBytes == 0 || got.ContentFile != filepath.Join(work, "content.mp4") {
		t.Fatalf("downloadContent: status %d, %d bytes in %q", got.ContentStatus, got.ContentBytes, got.ContentFile)
	}
	info, err := e.tools.Probe(ctx, got.ContentFile)
	if err != nil || info.Width != 1280 || info.Height != 720 || info.Duration < 3.5 {
		t.Fatalf("downloaded content: %+v, %v; want the 4 s 1280x720 video", info, err)
	}
	for i, d := range []nodeDeleted{got.Deleted, got.DeletedAgain} {
		if d.ID != c.ID || d.Object != "video.deleted" || !d.Deleted {
			t.Fatalf("delete %d: %+v", i+1, d)
		}
	}
	if a := got.AfterDelete; a.Status != "completed" || a.DeletedAt == nil || a.ExpiresAt != nil {
		t.Fatalf("after delete: %+v; want completed with deleted_at and no expires_at", a)
	}
	if got.ContentAfterDelete.Status != 404 {
		t.Fatalf("content after delete: %+v, want 404", got.ContentAfterDelete)
	}
	if len(got.Idempotent) != 2 || got.Idempotent[0] == "" || got.Idempotent[0] != got.Idempotent[1] {
		t.Errorf("create twice with one Idempotency-Key: %v, want one task", got.Idempotent)
	}
	if ic := got.IdempotencyConflict; ic.Status != 409 || ic.Code != "idempotency_conflict" || ic.Param != "Idempotency-Key" {
		t.Errorf("Idempotency-Key reused for another prompt: %+v, want 409 idempotency_conflict on Idempotency-Key", ic)
	}
}
