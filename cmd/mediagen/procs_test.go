package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
	"mediagen/internal/video"
)

// child is a mediagen process started from the test binary (see TestMain).
type child struct {
	cmd    *exec.Cmd
	stdout *bytes.Buffer
}

func startChild(t *testing.T, extraEnv []string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(extraEnv, "MEDIAGEN_TEST_ARGS="+strings.Join(args, " "))...)
	c := &child{cmd: cmd, stdout: &bytes.Buffer{}}
	cmd.Stdout = c.stdout
	cmd.Stderr = io.Discard
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	return c
}

// childKey makes a key of the demo tenant with the demo's credit in dir's database, for a
// child serve to be started on it: a child's stdout is no terminal, so it prints no demo key.
func childKey(t *testing.T, dir string) string {
	t.Helper()
	out := admin(t, dir, "key", "create", "--tenant", "demo", "--name", "child", "--credit", "100")
	key := reKey.FindString(out)
	if key == "" {
		t.Fatalf("no key: %s", out)
	}
	return key
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	testkit.WaitEvery(t, 50*time.Millisecond, 30*time.Second, base+" not ready", func() bool {
		res, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	})
}

// killMidRender waits until the child runs a media tool on dir, kills it with SIGKILL, and
// waits until its tools died with it: none keeps rendering beside the next process's render.
func killMidRender(t *testing.T, c *child, dir string) {
	t.Helper()
	serve := c.cmd.Process.Pid
	testkit.WaitFor(t, 20*time.Second, "no render started", func() bool { return len(toolsUsing(dir, serve)) > 0 })
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = c.cmd.Process.Wait()
	waitToolsGone(t, dir, serve)
}

// TestCrashMidRunLosesNothingAndChargesOnce kills the server with SIGKILL while tasks run,
// restarts it on the same data directory, and checks that every accepted task reaches a
// terminal state, that no task is settled twice, that the ledger balances, that its media
// tools die with it, and that no half-written or temporary file is left.
func TestCrashMidRunLosesNothingAndChargesOnce(t *testing.T) {
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	base := "http://" + addr
	// A short job lease: the killed process's claims are taken over within 2 s of the restart,
	// not the default 30 s, whichever step each task was in when the process died.
	args := []string{"serve", "--listen", addr, "--data-dir", dir, "--sandbox-pace", "1500ms", "--workers", "3", "--log-level", "warn",
		"--job-lease", "2s"}
	key := childKey(t, dir)
	first := startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	e := &e2e{t: t, key: key, tools: ffmpeg.Tools{}, base: base}
	var ids []string
	for i := 0; i < 10; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-mini","prompt":"crash %d","metadata":{"duration":4,"resolution":"480p","ratio":"1:1","client_request_id":"crash-%d"}}`, i, i)))
	}
	// Kill while a render's ffmpeg runs (some tasks mid-render, some queued): killMidRender
	// waits for the first render's tool.
	killMidRender(t, first, dir)

	startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	for _, id := range ids {
		if task := e.wait(id); task.Status != "completed" {
			t.Errorf("task %s ended %s: %+v", id, task.Status, task.Error)
		}
	}
	// Replays after the crash still find the accepted tasks.
	if again := e.create(`{"model":"demo-video-mini","prompt":"crash 3","metadata":{"duration":4,"resolution":"480p","ratio":"1:1","client_request_id":"crash-3"}}`); again != ids[3] {
		t.Errorf("replay after crash made task %s, want %s", again, ids[3])
	}

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var dup int
	if err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT ref FROM ledger_txns WHERE kind IN ('settle','release') GROUP BY ref HAVING COUNT(*) > 1)`).Scan(&dup); err != nil || dup != 0 {
		t.Fatalf("tasks settled twice: %d (%v)", dup, err)
	}
	var settled int
	_ = db.QueryRow(`SELECT COUNT(*) FROM ledger_txns WHERE kind IN ('settle','release')`).Scan(&settled)
	if settled != len(ids) {
		t.Errorf("settlements %d, want %d", settled, len(ids))
	}
	var bad int
	_ = db.QueryRow(`SELECT COUNT(*) FROM (SELECT txn_id FROM ledger_entries GROUP BY txn_id HAVING SUM(amount) <> 0)`).Scan(&bad)
	if bad != 0 {
		t.Errorf("%d unbalanced ledger transactions", bad)
	}
	// The process that took the renders over removed what the killed renders left.
	checkNoRenderLeftovers(t, dir)
	_ = filepath.Walk(filepath.Join(dir, "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if strings.HasPrefix(fi.Name(), ".tmp-") {
			t.Errorf("half-written file left: %s", p)
		}
		if strings.HasSuffix(p, ".mp4") {
			if _, err := e.tools.Probe(context.Background(), p); err != nil {
				t.Errorf("stored result %s does not probe: %v", p, err)
			}
		}
		return nil
	})
}

// countingWorker is a child process: `serve --role worker` with a fake upstream that records
// every submit and poll (with this process's pid) in a shared file and returns a fixture video.
func countingWorker(countFile string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	m := NewMain(os.Getenv, os.Stdout, os.Stderr)
	if err := m.ParseFlags(args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	up := &countingUpstream{file: countFile, fixture: os.Getenv("MEDIAGEN_TEST_FIXTURE"), pid: os.Getpid()}
	m.Upstreams = map[string]video.Upstream{"sandbox": {Generator: up, Enhancer: up}}
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-ctx.Done()
	_ = m.Close()
	return 0
}

type countingUpstream struct {
	file, fixture string
	pid           int
	mu            sync.Mutex
}

func (c *countingUpstream) record(event, key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %d\n", event, key, c.pid)
}

func (c *countingUpstream) SubmitGeneration(_ context.Context, r provider.GenerateRequest) (string, error) {
	c.record("submit", r.IdempotencyKey)
	time.Sleep(150 * time.Millisecond) // an upstream call takes time, so claims overlap
	return r.IdempotencyKey, nil
}

func (c *countingUpstream) PollGeneration(_ context.Context, job string) (provider.Job, error) {
	c.record("poll", job)
	return provider.Job{Status: provider.StatusSucceeded, Progress: 100,
		Output: &provider.Output{Source: provider.Source{Path: c.fixture}, ContentType: "video/mp4", CompletionTokens: 1000}}, nil
}

func (c *countingUpstream) SubmitEnhancement(_ context.Context, r provider.EnhanceRequest) (string, error) {
	c.record("submit", r.IdempotencyKey)
	return r.IdempotencyKey, nil
}

func (c *countingUpstream) PollEnhancement(ctx context.Context, job string) (provider.Job, error) {
	return c.PollGeneration(ctx, job)
}

// TestTwoWorkerProcessesShareTasksOnPostgres runs the API in this process and two
// `serve --role worker` processes on one PostgreSQL database; a counting fake upstream shows
// that every task was submitted exactly once, by one process, and that both took part.
func TestTwoWorkerProcessesShareTasksOnPostgres(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	url := pgtest.URL(t)
	dir := t.TempDir()
	fixture := filepath.Join(dir, "fixture.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 24, Duration: 1, Container: "mp4"}, fixture); err != nil {
		t.Fatal(err)
	}
	counts := filepath.Join(dir, "counts.txt")
	api, _ := startMain(t, filepath.Join(dir, "api"), "--db", url, "--role", "api", "--signing-key", strings.Repeat("ab", 32))
	key := api.DemoKey
	if key == "" {
		t.Fatal("no demo key")
	}
	for i := 0; i < 2; i++ {
		addr := testkit.FreeAddr(t)
		startChild(t, []string{"MEDIAGEN_TEST_COUNT_FILE=" + counts, "MEDIAGEN_TEST_FIXTURE=" + fixture},
			"serve", "--role", "worker", "--db", url, "--listen", addr, "--workers", "2",
			"--data-dir", filepath.Join(dir, "api"), "--signing-key", strings.Repeat("ab", 32), "--log-level", "warn")
		waitReady(t, "http://"+addr) // a worker process serves /healthz, /readyz and /metrics only
	}
	e := &e2e{t: t, m: api, key: key}
	var ids []string
	for i := 0; i < 24; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"share %d","metadata":{"duration":4,"resolution":"480p"}}`, i)))
	}
	for _, id := range ids {
		if task := e.wait(id); task.Status != "completed" {
			t.Fatalf("task %s: %+v", id, task)
		}
	}
	f, err := os.Open(counts)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	submits := map[string][]string{}
	pids := map[string]int{}
	line := regexp.MustCompile(`^submit (\S+) (\d+)$`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := line.FindStringSubmatch(sc.Text()); m != nil {
			submits[m[1]] = append(submits[m[1]], m[2])
			pids[m[2]]++
		}
	}
	for _, id := range ids {
		if got := submits[id+":gen"]; len(got) != 1 {
			t.Errorf("task %s submitted %d times (by %v), want once", id, len(got), got)
		}
	}
	if len(pids) != 2 {
		t.Errorf("work done by %d processes (%v), want both", len(pids), pids)
	}
	t.Logf("submits per worker process: %v", pids)
}

// TestSIGTERMShutsDownGracefully: serve stops accepting, lets an in-flight request finish
// (a speech request that takes 2 s), closes the database and exits 0.
func TestSIGTERMShutsDownGracefully(t *testing.T) {
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	base := "http://" + addr
	key := childKey(t, dir)
	c := startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, "serve", "--listen", addr, "--data-dir", dir, "--log-level", "warn")
	waitReady(t, base)
	done := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(`{"model":"demo-speech","input":"Goodbye [sandbox:slow=2s]"}`))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err.Error()
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		done <- fmt.Sprintf("%d %s", res.StatusCode, b)
	}()
	waitSpeechRecorded(t, dir) // the speech request is in flight
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if got := <-done; !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"object":"audio.speech"`) {
		t.Fatalf("in-flight request was not finished: %s", got)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still accepting connections after exit")
	}
	// The database was closed cleanly: it opens again and the ledger holds.
	m, _ := startMain(t, dir)
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// waitSpeechRecorded waits until serve on dir has recorded a speech request: the request
// is then in flight (its generation takes the seconds its marker asks for).
func waitSpeechRecorded(t *testing.T, dir string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testkit.WaitEvery(t, 20*time.Millisecond, 30*time.Second, "the speech request was never recorded", func() bool {
		var n int
		return db.QueryRow(`SELECT COUNT(*) FROM speeches`).Scan(&n) == nil && n > 0
	})
}
