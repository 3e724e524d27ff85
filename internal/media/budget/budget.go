// Package budget is the process-wide budget of media work: every ffmpeg, ffprobe and
// espeak-ng process the service starts — for a request, a job, a sweep or a late thumbnail —
// first takes one of its slots, and waiting work is served fairly across tenants (Fair). One
// Budget is made by the wiring (cmd/mediagen serve, --media-slots) and handed to everything
// that starts a media process: ffmpeg.Tools.Budget, the video and speech services. Whose work
// it is comes in the context (internal/tenantctx). docs/limits.md#media-work says why the
// numbers are what they are.
//
// Two ways to wait:
//   - Acquire (job-path work: renders, result processing, speech generation, sweeps) waits as
//     long as its context lets it. A job keeps its lease meanwhile: the job engine's heartbeat
//     runs beside the handler whatever the handler waits for.
//   - Reserve (request-path work that a client waits for, such as a late thumbnail) waits at
//     most RequestWait, then refuses with 503 server_busy, or 429 when the tenant already holds
//     its share of the slots, both with Retry-After. Admit refuses such work at once when the
//     queue is already a full round of slots deep (synchronous speech, before it is accepted).
package budget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/apierr"
	"mediagen/internal/tenantctx"
)

const (
	// RequestWait bounds how long request-path work waits for a slot. Making a thumbnail
	// takes 0.1–0.5 s of one slot, so 5 s is several turns of every slot even on 2 of them;
	// past it the slots are held by long work (renders) and a client is better served by a
	// refusal with Retry-After than by a connection held open.
	RequestWait = 5 * time.Second
	// RetryAfter is the Retry-After of a refusal, in seconds: a hint, as nothing says when a
	// slot frees. Short media work ends within a second or two.
	RetryAfter = 2
	// ChildMemory is the memory one media process is assumed to reach when the default size
	// is derived: a 1080p encode with x264's lookahead, or a decoded 4k frame chain, is a few
	// hundred MiB; 1 GiB leaves room for the largest inputs the pixel budgets admit.
	ChildMemory = 1 << 30
	// MaxSize bounds --media-slots: far above what any host runs usefully at once (each slot
	// is a process of its own, with its threads and memory).
	MaxSize = 1024
)

// Refusal codes (docs/http.md).
const (
	CodeBusy  = "server_busy"
	CodeShare = "too_many_media_requests"
)

// Work names request-path work in refusals and metrics: a closed set.
const (
	WorkThumbnail = "thumbnail"
	WorkSpeech    = "speech"
)

// Config configures a Budget.
type Config struct {
	// Size is how many media processes run at once in this process; 0 means DefaultSize().
	Size int
	// RequestWait bounds Reserve's wait; 0 means RequestWait.
	RequestWait time.Duration
	// Registry receives the budget's series; nil records none.
	Registry prometheus.Registerer
}

// Budget is the process-wide budget of media processes. A nil *Budget admits everything
// at once (tests of parts that do not exercise it).
type Budget struct {
	fair    *Fair
	wait    time.Duration
	metrics *metrics
}

// New makes the budget and registers its series.
func New(cfg Config) *Budget {
	if cfg.Size <= 0 {
		cfg.Size = DefaultSize()
	}
	if cfg.RequestWait <= 0 {
		cfg.RequestWait = RequestWait
	}
	b := &Budget{fair: NewFair(cfg.Size), wait: cfg.RequestWait}
	b.metrics = newMetrics(cfg.Registry, b.fair)
	return b
}

// Size is the number of slots.
func (b *Budget) Size() int { return b.fair.size }

// Usage is a snapshot of the slots.
func (b *Budget) Usage() Usage { return b.fair.Usage() }

// heldKey marks a context whose work already holds a slot of a budget (Reserve).
type heldKey struct{}

// waitedForKey marks a context whose work a client is waiting for (WaitedFor).
type waitedForKey struct{}

// WaitedFor marks work that a client waits for on an open request (a synchronous speech
// generation, even when a job runs it): its processes take the next free slot before any
// background work waiting (Fair.AcquireFirst). Without it, a tenant's queue of renders would
// hold its own speech behind them for minutes, or have it refused at once.
func WaitedFor(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitedForKey{}, true)
}

// Acquire takes a slot for one media process of the work in ctx (tenantctx), waiting as long
// as ctx lets it; the returned func gives it back. Work that holds a slot from Reserve runs its
// processes under that slot (one at a time, as every caller runs them). It implements
// ffmpeg.Gate.
func (b *Budget) Acquire(ctx context.Context, tool string) (release func(), err error) {
	if b == nil || ctx.Value(heldKey{}) == b {
		b.metrics.started(tool)
		return func() {}, nil
	}
	tenant, key := tenantctx.From(ctx)
	start := time.Now()
	acquire := b.fair.Acquire
	if ctx.Value(waitedForKey{}) != nil {
		acquire = b.fair.AcquireFirst
	}
	release, err = acquire(ctx, tenant, key)
	if err != nil {
		return nil, fmt.Errorf("waiting for a media slot: %w", err)
	}
	b.metrics.waited(time.Since(start))
	b.metrics.started(tool)
	return release, nil
}

// Reserve takes a slot for request-path work that a client waits for, waiting at most the
// request wait: the media processes run with the returned context run under that slot, and
// release gives it back. When none frees in time it refuses with a *Refusal (503, or 429 when
// the tenant already holds its share); when ctx ends first, it returns ctx's error and nothing
// is left waiting.
func (b *Budget) Reserve(ctx context.Context, work string) (context.Context, func(), error) {
	if b == nil {
		return ctx, func() {}, nil
	}
	tenant, key := tenantctx.From(ctx)
	wctx, cancel := context.WithTimeout(ctx, b.wait)
	defer cancel()
	start := time.Now()
	release, err := b.fair.AcquireFirst(wctx, tenant, key)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, b.refuse(work, tenant)
	}
	b.metrics.waited(time.Since(start))
	return context.WithValue(ctx, heldKey{}, b), release, nil
}

// Admit refuses at once request-path work that would queue behind a full round of other
// request-path work (WaitedFor, Reserve), or behind some while its tenant already holds its
// share: synchronous work checks it before it is accepted, so nothing is reserved or charged
// for a refusal. Background work waiting (renders) does not count: request-path work goes
// before it. Admitted work then waits in Acquire within its own bound.
func (b *Budget) Admit(ctx context.Context, work string) error {
	if b == nil {
		return nil
	}
	tenant, _ := tenantctx.From(ctx)
	u := b.fair.Usage()
	if u.WaitingFirst == 0 || u.WaitingFirst < u.Size && !b.fair.OverShare(tenant) {
		return nil
	}
	return b.refuse(work, tenant)
}

func (b *Budget) refuse(work, tenant string) error {
	if b.fair.OverShare(tenant) {
		b.metrics.refused(work, reasonShare)
		return &Refusal{Err: &apierr.Error{Kind: apierr.KindRateLimit, Code: CodeShare, RetryAfter: RetryAfter,
			Message: fmt.Sprintf("This account's media work already takes its share of the server's media capacity. Retry after %d s (Retry-After).", RetryAfter)}}
	}
	b.metrics.refused(work, reasonBusy)
	return &Refusal{Err: &apierr.Error{Kind: apierr.KindUnavailable, Code: CodeBusy, RetryAfter: RetryAfter,
		Message: fmt.Sprintf("The server is busy with other media work. Retry after %d s (Retry-After).", RetryAfter)}}
}

// Refusal is request-path work refused by the budget. It wraps the client's error, so
// apierr.As finds the envelope (with its Retry-After).
type Refusal struct{ Err *apierr.Error }

func (r *Refusal) Error() string { return "media budget: " + r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

// IsRefusal reports whether err is a budget's refusal.
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// DefaultSize is the budget of this host: two processes per core (a media process waits on
// disk and pipes part of the time; more only slows each one down), and no more than the
// memory allows at ChildMemory each (the host's or the container's, whichever is less), at
// least 2.
func DefaultSize() int {
	return sizeFor(runtime.NumCPU(), memoryBytes())
}

func sizeFor(cpus int, mem int64) int {
	n := 2 * cpus
	if mem > 0 {
		n = min(n, int(mem/ChildMemory))
	}
	return min(max(n, 2), MaxSize)
}

// memoryBytes is the memory this process may use: the cgroup's limit (a container) when it
// sets one below the host's, else the host's total; 0 when neither can be read.
func memoryBytes() int64 {
	var total int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil {
						total = kb << 10
					}
				}
			}
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if lim, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && lim > 0 && (total == 0 || lim < total) {
			total = lim
		}
	}
	return total
}
