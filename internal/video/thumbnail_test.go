package video

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
	"mediagen/internal/testkit"
)

// firstFrames stands in for ffmpeg's first-frame extraction: each call is one media process
// that runs for work (or until its context ends), and it records how many ran at once.
type firstFrames struct {
	work            time.Duration
	running, peak   atomic.Int32
	calls           atomic.Int32
	mu              sync.Mutex
	tenantsInCalled []string
}

func (f *firstFrames) make(ctx context.Context, video, out string) error {
	f.calls.Add(1)
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	tenant, _ := tenantctx.From(ctx)
	f.mu.Lock()
	f.tenantsInCalled = append(f.tenantsInCalled, tenant)
	f.mu.Unlock()
	// The simulated process's run time, not a wait for an event.
	t := time.NewTimer(f.work)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return writeJPEGStub(out)
}

// oldTasks stores n completed tasks of the demo key made before thumbnails (no thumbnail key,
// none stored), each with its video.
func oldTasks(t *testing.T, n int) (*fakeStore, blob.Store, []string) {
	t.Helper()
	fs, err := blob.NewFS(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	st := newFakeStore("key_1", 0)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("video_old%02d", i)
		key := "videos/" + id + "/result.mp4"
		if _, err := fs.Put(context.Background(), key, strings.NewReader("bytes")); err != nil {
			t.Fatal(err)
		}
		st.tasks[id] = store.Task{ID: id, TenantID: "demo", KeyID: "key_1", Route: "native", Status: store.StatusCompleted, Progress: 100,
			Result: []byte(`{"video_key":"` + key + `","duration":4,"fps":24,"width":854,"height":480}`)}
		ids = append(ids, id)
	}
	return st, fs, ids
}

// The flood: 45 old tasks asked for their thumbnails, each request dropped after
// 20 ms. At most the budget's slots of first-frame processes run at once, and a request
// dropped while it waited for a slot leaves no work behind: only the requests that got a
// slot started one (before, each request left a goroutine that ran its ffmpeg: 40 at once).
func TestDroppedLateThumbnailRequestsRunAtMostTheMediaBudgetAtOnce(t *testing.T) {
	t.Parallel()
	const slots = 2
	st, blobs, ids := oldTasks(t, 45)
	frames := &firstFrames{work: 300 * time.Millisecond}
	media := budget.New(budget.Config{Size: slots})
	s := &Service{Store: st, Blobs: blobs, FirstFrame: frames.make, Media: media, Now: time.Now}
	owner := demoCaller(t)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			_, _ = s.ContentKey(ctx, owner, id, VariantThumbnail)
		})
	}
	wg.Wait()
	testkit.WaitFor(t, 10*time.Second, "late thumbnails still running", func() bool {
		return frames.running.Load() == 0 && media.Usage().InUse == 0
	})
	if p := frames.peak.Load(); p > slots {
		t.Errorf("%d first-frame processes ran at once; the budget is %d", p, slots)
	}
	if c := frames.calls.Load(); c > slots {
		t.Errorf("%d first-frame processes started for 45 requests dropped after 20 ms; want at most the %d that got a slot at once", c, slots)
	}
	for _, tenant := range frames.tenantsInCalled {
		if tenant != "demo" {
			t.Errorf("a late thumbnail ran as tenant %q, want the task's (demo)", tenant)
		}
	}
}

// A request that finds every slot held past the request wait is refused with Retry-After:
// 503 server_busy while other tenants' work holds them, 429 when its own tenant's does.
func TestLateThumbnailWithNoSlotInTimeIsRefusedWithRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, holder string
		status       int
		code         string
	}{
		{"slots held by another tenant", "bolt", 503, budget.CodeBusy},
		{"slots held by its own tenant", "demo", 429, budget.CodeShare},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, blobs, ids := oldTasks(t, 1)
			frames := &firstFrames{work: time.Millisecond}
			media := budget.New(budget.Config{Size: 1, RequestWait: 50 * time.Millisecond})
			release, err := media.Acquire(tenantctx.With(context.Background(), tc.holder, "key_x"), "ffmpeg")
			if err != nil {
				t.Fatal(err)
			}
			s := &Service{Store: st, Blobs: blobs, FirstFrame: frames.make, Media: media, Now: time.Now}
			_, err = s.ContentKey(context.Background(), demoCaller(t), ids[0], VariantThumbnail)
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status() != tc.status || ae.CodeOrDefault() != tc.code || ae.RetryAfter < 1 {
				t.Fatalf("with every slot held: %v (%+v), want %d %s with Retry-After", err, ae, tc.status, tc.code)
			}
			if frames.calls.Load() != 0 {
				t.Errorf("a refused request started a first-frame process")
			}
			release()
			if k, err := s.ContentKey(context.Background(), demoCaller(t), ids[0], VariantThumbnail); err != nil || k != ThumbnailKey(ids[0]) {
				t.Fatalf("once a slot is free: %q, %v", k, err)
			}
		})
	}
}

// writeJPEGStub writes a file where the first frame would be: the service stores whatever
// the tool wrote, and these tests do not look at it.
func writeJPEGStub(out string) error { return os.WriteFile(out, []byte("jpeg"), 0o600) }
