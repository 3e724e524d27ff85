package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
	"mediagen/internal/testkit"
)

// crashMidRender submits a generation on a first engine, lets its render begin, and stops
// that engine as a killed process would stop: the render never finishes. It returns the job
// id and the directory.
func crashMidRender(t *testing.T, key string) (dir, id string) {
	t.Helper()
	dir = t.TempDir()
	e1 := newEngine(t, dir)
	started := make(chan string, 1)
	e1.beforeRender = func(ctx context.Context, id string) {
		started <- id
		<-ctx.Done()
	}
	id, err := e1.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: key, Prompt: "taken over", Width: 160, Height: 90, Duration: 1})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	e1.Close()
	return dir, id
}

// plantLeftovers writes what a render killed by SIGKILL leaves in its job directory: ffmpeg's
// partial temporary output, a temporary record file, and a partial fetched input.
func plantLeftovers(t *testing.T, e *Engine, id string) []string {
	t.Helper()
	inputs := filepath.Join(e.jobDir(id), inputsDir)
	if err := os.MkdirAll(inputs, 0o700); err != nil {
		t.Fatal(err)
	}
	left := []string{
		filepath.Join(e.jobDir(id), ".mediagen-123456.tmp.mp4"),
		filepath.Join(e.jobDir(id), ".sandbox-654321.tmp"),
		filepath.Join(inputs, ".fetch-42.tmp"),
	}
	for _, p := range left {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return left
}

// A process that takes over a job whose render died removes what the dead render left in
// the job directory, and keeps what is complete (the spec, fetched inputs).
func TestTakeoverRemovesWhatTheDeadRenderLeft(t *testing.T) {
	t.Parallel()
	dir, id := crashMidRender(t, "leftovers")
	e2 := newEngine(t, dir)
	left := plantLeftovers(t, e2, id)
	fetched := filepath.Join(e2.jobDir(id), inputsDir, "source.mp4")
	if err := os.WriteFile(fetched, []byte("complete input"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Hold the render after the takeover cleaned up, to look at the directory before the
	// render's own files appear.
	cleaned := make(chan struct{})
	release := make(chan struct{})
	e2.beforeRender = func(ctx context.Context, _ string) {
		close(cleaned)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	// Polls until one starts the render. A poll can find the dead render's lock still held
	// for an instant: a process another test forks in this binary shares the lock's file
	// descriptor until it execs (a CI run at -parallel 4 saw it). That poll leaves the job alone, and the next one asks again.
	deadline := time.After(30 * time.Second)
polls:
	for {
		if _, err := e2.PollGeneration(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		select {
		case <-cleaned:
			break polls
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("the taken-over render never started")
		}
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("leftover %s of the dead render is still there (%v)", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(fetched); err != nil {
		t.Errorf("a complete fetched input was removed: %v", err)
	}
	close(release)
	if j := wait(t, e2.PollGeneration, id, 30*time.Second); j.Status != provider.StatusSucceeded {
		t.Fatalf("after the takeover: %+v", j)
	}
	entries, _ := os.ReadDir(e2.jobDir(id))
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".") {
			t.Errorf("temporary file %s left after the render", en.Name())
		}
	}
}

// While another live process renders the job (it holds the job's lock), a poll here neither
// starts a second render nor touches that render's temporary files.
func TestLiveRenderElsewhereIsLeftAlone(t *testing.T) {
	t.Parallel()
	dir, id := crashMidRender(t, "shared")
	e2 := newEngine(t, dir)
	left := plantLeftovers(t, e2, id)
	// The dead render's lock can stay held for an instant (see above): try again meanwhile.
	var (
		other *os.File
		err   error
	)
	testkit.PollEvery(20*time.Millisecond, 5*time.Second, func() bool {
		other, err = lockFile(e2.jobFile(id, renderLockFile))
		return !errors.Is(err, errLocked)
	})
	if err != nil {
		t.Skipf("no file locks here: %v", err)
	}
	for range 5 {
		if j, err := e2.PollGeneration(context.Background(), id); err != nil || j.Status != provider.StatusRunning {
			t.Fatalf("poll while rendered elsewhere: %+v, %v", j, err)
		}
		time.Sleep(20 * time.Millisecond) // fixed: a negative check, spread over time, that no render starts
	}
	e2.wg.Wait() // the attempts that found the lock taken have returned
	if n := e2.renders.Load(); n != 0 {
		t.Errorf("%d renders started beside the live one", n)
	}
	for _, p := range left {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("a file of the live render was touched: %v", err)
		}
	}
	other.Close() // the other process ended
	if j := wait(t, e2.PollGeneration, id, 30*time.Second); j.Status != provider.StatusSucceeded {
		t.Fatalf("after the other process ended: %+v", j)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("leftover %s stayed after the takeover", filepath.Base(p))
		}
	}
}

// A synthesis killed mid-way leaves a temporary output in the shared speech directory; the
// next engine removes it once it is old enough to be nobody's, and keeps fresh ones.
func TestNewRemovesStaleSpeechLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	speechDir := filepath.Join(dir, "speech")
	if err := os.MkdirAll(speechDir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(speechDir, ffmpeg.TempPrefix+"1.tmp.mp3")
	fresh := filepath.Join(speechDir, ffmpeg.TempPrefix+"2.tmp.mp3")
	done := filepath.Join(speechDir, "sbx_000000000000000000000000.mp3")
	for _, p := range []string{stale, fresh, done} {
		if err := os.WriteFile(p, []byte("audio"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-24 * time.Hour)
	for _, p := range []string{stale, done} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	newEngine(t, dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary speech output kept (%v)", err)
	}
	for _, p := range []string{fresh, done} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
}
