//go:build linux

package ffmpeg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/media/budget"
	"mediagen/internal/tenantctx"
)

// Eight renders asked for at once with a media budget of two: at most two ffmpeg processes
// are children of this process at any moment, counted in /proc, and every render completes.
// Not parallel: other tests' processes would be counted too.
func TestToolsStartNoMoreProcessesThanTheBudgetAtOnce(t *testing.T) {
	tools := testTools(t)
	tools.Threads = 1
	tools.Budget = budget.New(budget.Config{Size: 2})
	dir := t.TempDir()
	stop := make(chan struct{})
	var peak atomic.Int32
	var watch sync.WaitGroup
	watch.Go(func() {
		for {
			peak.Store(max(peak.Load(), int32(childrenRunning(os.Getpid(), "ffmpeg"))))
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			ctx := tenantctx.With(context.Background(), fmt.Sprintf("tenant%d", i%3), "key")
			errs[i] = tools.Render(ctx, RenderSpec{Width: 320, Height: 240, FPS: 24, Duration: 2, Text: "budget"}, filepath.Join(dir, fmt.Sprintf("%d.mp4", i)))
		})
	}
	wg.Wait()
	close(stop)
	watch.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("render %d: %v", i, err)
		}
	}
	if p := peak.Load(); p > 2 || p < 1 {
		t.Fatalf("%d ffmpeg processes ran at once; want 1 or 2 (the budget)", p)
	}
}

// childrenRunning counts the children of parent running comm that have not ended.
func childrenRunning(parent int, comm string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, ppid, state, ok := procStat(pid); ok && ppid == parent && c == comm && state != "Z" {
			n++
		}
	}
	return n
}
