package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/apierr"
	"mediagen/internal/tenantctx"
	"mediagen/internal/testkit"
)

func as(tenant, key string) context.Context {
	return tenantctx.With(context.Background(), tenant, key)
}

// Tenant A holds the only slot and has many more waiting; tenant B asks for one after them.
// When A's slot frees, B's work goes next: the tenant holding the fewest slots is served
// first, not the one that queued first. Then A's waiting work is served in turn.
func TestFreedMediaSlotGoesToTheTenantHoldingFewest(t *testing.T) {
	t.Parallel()
	b := New(Config{Size: 1})
	hold, err := b.Acquire(as("acme", "key_a"), "ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	start := func(tenant, key, name string) {
		wg.Go(func() {
			release, err := b.Acquire(as(tenant, key), "ffmpeg")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			release()
		})
	}
	for i := range 8 {
		start("acme", "key_a", fmt.Sprintf("acme%d", i))
		testkit.WaitFor(t, 5*time.Second, "acme's work not waiting", func() bool { return b.Usage().Waiting == i+1 })
	}
	start("bolt", "key_b", "bolt")
	testkit.WaitFor(t, 5*time.Second, "bolt's work not waiting", func() bool { return b.Usage().Waiting == 9 })
	hold()
	wg.Wait()
	if order[0] != "bolt" {
		t.Fatalf("served in order %v; want bolt first: it held no slot", order)
	}
	if u := b.Usage(); u.InUse != 0 || u.Waiting != 0 || u.Tenants != 0 {
		t.Fatalf("after all work: %+v", u)
	}
}

// At most Size processes run at once however many ask, and work whose context ends while it
// waits leaves the queue without taking a slot.
func TestMediaBudgetRunsAtMostItsSizeAtOnce(t *testing.T) {
	t.Parallel()
	b := New(Config{Size: 3})
	var mu sync.Mutex
	running, peak := 0, 0
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range 30 {
		wg.Go(func() {
			ctx, cancel := context.WithCancel(as(fmt.Sprintf("t%d", i%4), "k"))
			defer cancel()
			if i%2 == 1 {
				cancel() // gone before its turn
			}
			release, err := b.Acquire(ctx, "ffprobe")
			if err != nil {
				return
			}
			defer release()
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			<-gate
			mu.Lock()
			running--
			mu.Unlock()
		})
	}
	testkit.WaitFor(t, 5*time.Second, "slots not all taken", func() bool { return b.Usage().InUse == 3 })
	close(gate)
	wg.Wait()
	if peak > 3 {
		t.Fatalf("%d ran at once; the budget is 3", peak)
	}
	if u := b.Usage(); u.InUse != 0 || u.Waiting != 0 {
		t.Fatalf("after all work: %+v", u)
	}
}

// Request-path work refused by the budget: Admit refuses at once when a full round of slots
// already waits (503), or when others wait and the tenant holds its share (429); Reserve
// refuses after the request wait. Both carry Retry-After, and the refusals are counted by
// work and reason.
func TestRequestPathWorkIsRefusedWithRetryAfterWhenTheBudgetIsFull(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := New(Config{Size: 2, RequestWait: 30 * time.Millisecond, Registry: reg})
	if err := b.Admit(as("acme", "k"), WorkSpeech); err != nil {
		t.Fatalf("admit with the budget idle: %v", err)
	}
	r1, _ := b.Acquire(as("acme", "k"), "ffmpeg")
	r2, _ := b.Acquire(as("acme", "k"), "ffmpeg")
	if err := b.Admit(as("bolt", "k"), WorkSpeech); err != nil {
		t.Fatalf("admit with the slots held and nothing waiting: %v", err)
	}
	ctx, cancel := context.WithCancel(as("bolt", "k"))
	defer cancel()
	ctx = WaitedFor(ctx) // request-path work: what Admit counts
	go func() { _, _ = b.Acquire(ctx, "ffmpeg") }()
	testkit.WaitFor(t, 5*time.Second, "bolt's work not waiting", func() bool { return b.Usage().Waiting == 1 })

	check := func(name string, err error, status int, code string) {
		t.Helper()
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Status() != status || ae.CodeOrDefault() != code || ae.RetryAfter != RetryAfter || !IsRefusal(err) {
			t.Errorf("%s: %v, want %d %s with Retry-After %d", name, err, status, code, RetryAfter)
		}
	}
	check("acme admitted while bolt waits", b.Admit(as("acme", "k"), WorkSpeech), 429, CodeShare)
	if err := b.Admit(as("carol", "k"), WorkSpeech); err != nil {
		t.Errorf("carol admitted with one waiting of two slots: %v", err)
	}
	_, _, err := b.Reserve(as("carol", "k"), WorkThumbnail)
	check("carol's thumbnail after the wait", err, 503, CodeBusy)
	_, _, err = b.Reserve(as("acme", "k"), WorkThumbnail)
	check("acme's thumbnail after the wait", err, 429, CodeShare)
	go func() { _, _ = b.Acquire(ctx, "ffmpeg") }()
	testkit.WaitFor(t, 5*time.Second, "bolt's second not waiting", func() bool { return b.Usage().Waiting == 2 })
	check("dave with a full round waiting", b.Admit(as("dave", "k"), WorkSpeech), 503, CodeBusy)

	gone, stop := context.WithCancel(as("carol", "k"))
	stop()
	if _, _, err := b.Reserve(gone, WorkThumbnail); !errors.Is(err, context.Canceled) || IsRefusal(err) {
		t.Errorf("a request gone while it waited: %v, want its context's error and no refusal", err)
	}
	r1()
	r2()
	for labels, want := range map[[2]string]float64{
		{WorkSpeech, reasonBusy}: 1, {WorkThumbnail, reasonBusy}: 1, {WorkSpeech, reasonShare}: 1, {WorkThumbnail, reasonShare}: 1,
	} {
		if got := value(t, reg, "mediagen_media_refused_total", "work", labels[0], "reason", labels[1]); got != want {
			t.Errorf("mediagen_media_refused_total%v = %v, want %v", labels, got, want)
		}
	}
}

// value is the value of the series of name with the given label pairs; -1 when it is absent.
func value(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return -1
}

// Work holding a slot from Reserve runs its processes under it: they take no second slot
// (which, with every other slot taken, would wait behind work that waits for this one).
func TestProcessesOfReservedWorkRunUnderItsSlot(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	b := New(Config{Size: 1, Registry: reg})
	ctx, release, err := b.Reserve(as("acme", "k"), WorkThumbnail)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		done, err := b.Acquire(ctx, "ffmpeg")
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
	if u := b.Usage(); u.InUse != 1 {
		t.Fatalf("usage %+v, want the one reserved slot", u)
	}
	release()
	if got := value(t, reg, "mediagen_media_processes_total", "tool", "ffmpeg"); got != 3 {
		t.Fatalf("mediagen_media_processes_total{tool=ffmpeg} = %v, want 3", got)
	}
	for name, want := range map[string]float64{"mediagen_media_slots": 1, "mediagen_media_slots_in_use": 0, "mediagen_media_slots_waiting": 0, "mediagen_media_slot_wait_seconds": 1} {
		if got := value(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// The default size: two per core, no more than memory allows at ChildMemory each, at least 2.
func TestDefaultMediaSlotsFollowCoresAndMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cpus int
		mem  int64
		want int
	}{
		{2, 24 << 30, 4},
		{16, 4 << 30, 4},
		{1, 512 << 20, 2},
		{8, 0, 16},
		{4096, 1 << 50, MaxSize},
	} {
		if got := sizeFor(tc.cpus, tc.mem); got != tc.want {
			t.Errorf("%d cores, %d MiB: %d slots, want %d", tc.cpus, tc.mem>>20, got, tc.want)
		}
	}
	if n := DefaultSize(); n < 2 || n > MaxSize {
		t.Errorf("DefaultSize() = %d", n)
	}
}

// Background work waiting (a tenant's queue of renders) neither refuses a synchronous request
// nor goes before it: request-path work takes the next free slot, even when its tenant holds
// every slot and its own renders wait. Before, a single tenant's render backlog refused its
// own speech (429) until the backlog drained.
func TestRequestPathWorkGoesBeforeWaitingBackgroundWork(t *testing.T) {
	t.Parallel()
	b := New(Config{Size: 2, RequestWait: time.Minute})
	r1, _ := b.Acquire(as("acme", "k"), "ffmpeg")
	r2, _ := b.Acquire(as("acme", "k"), "ffmpeg")
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	run := func(ctx context.Context, name string) {
		wg.Go(func() {
			release, err := b.Acquire(ctx, "ffmpeg")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			release()
		})
	}
	for i := range 4 {
		run(as("acme", "k"), fmt.Sprint("render", i))
		testkit.WaitFor(t, 5*time.Second, "renders not waiting", func() bool { return b.Usage().Waiting == i+1 })
	}
	if err := b.Admit(as("acme", "k"), WorkSpeech); err != nil {
		t.Fatalf("speech refused while only background work waits: %v", err)
	}
	run(WaitedFor(as("acme", "k")), "speech")
	testkit.WaitFor(t, 5*time.Second, "speech not waiting", func() bool { return b.Usage().WaitingFirst == 1 })
	r1()
	wg.Wait() // the renders and the speech take turns on the freed slot; r2 is held throughout
	if order[0] != "speech" {
		t.Fatalf("served in order %v; want the speech first", order)
	}
	r2()
}
