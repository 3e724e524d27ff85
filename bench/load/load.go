// Package load is an HTTP load generator for benchmarks, with two modes:
//
//   - Run is open-loop: request i is due at start + i/Rate whether or not earlier requests have
//     finished, and its latency is measured from that due time, so time spent waiting for a free
//     slot (queueing) counts. This avoids coordinated omission: a stalled server cannot slow the
//     generator down and so hide its own stall.
//   - Saturate is closed-loop: Concurrency workers send back to back; it finds the highest
//     throughput, and its latencies are service times measured from each actual send.
//
// Both run for a bounded time, send at most MaxInFlight (or Concurrency) requests at once, read
// every response body to the end, and stop by themselves.
package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one measurement.
type Config struct {
	// Rate is the open-loop arrival rate in requests per second (Run only).
	Rate float64
	// Concurrency is the number of closed-loop workers (Saturate only).
	Concurrency int
	// Duration is the measured window. Warmup runs before it with the same load; requests
	// due (Run) or started (Saturate) during the warmup are sent but not counted.
	Duration, Warmup time.Duration
	// MaxInFlight bounds the open-loop requests outstanding at once (default 256). A request
	// that is due while all slots are busy waits for one, and the wait counts in its latency;
	// it is dropped, and counted in Result.Dropped, when it cannot start before the window ends
	// (+5 ms) or within MaxLateness of its due time.
	MaxInFlight int
	// MaxLateness, when positive, drops open-loop requests that could not start within that
	// long of their due time. Zero lets them wait until the window ends.
	MaxLateness time.Duration
	// Timeout bounds each request, reading the body included (default 10 s). A request that
	// times out counts as an error.
	Timeout time.Duration
	// Client sends the requests; nil uses NewClient sized for the concurrency.
	Client *http.Client
	// NewRequest makes request number i (0, 1, 2, … in due order, warmup included). It is
	// called from many goroutines at once. An error counts as a failed request.
	NewRequest func(i int) (*http.Request, error)
	// Expect tells which status codes count as OK; nil accepts 2xx.
	Expect func(status int) bool
}

// Mode is how a Result was measured.
type Mode string

const (
	Open   Mode = "open"   // fixed arrival rate (Run)
	Closed Mode = "closed" // back-to-back workers (Saturate)
)

// Result is what one measurement saw. Only requests due (open) or started (closed) inside the
// measured window are counted.
type Result struct {
	Mode        Mode
	Rate        float64 // target rate (open loop)
	Concurrency int     // workers (closed loop) or MaxInFlight (open loop)
	// Duration is the configured measured window.
	Duration time.Duration
	// Window runs from the start of the measured window to the last counted completion, and
	// is never shorter than Duration.
	Window time.Duration
	// Scheduled is the number of requests due in the window (open loop): Sent + Dropped.
	Scheduled int64
	Sent      int64 // requests actually started
	OK        int64 // responses whose status Expect accepts
	// Errors counts transport errors, timeouts, NewRequest errors and unexpected statuses.
	Errors int64
	// Dropped counts due requests that never started because no slot freed up in time.
	Dropped int64
	// Statuses counts responses by status code.
	Statuses map[int]int64
	// ErrorSample is the text of one error, when there were any.
	ErrorSample string
	// Throughput is OK responses per second of Window ("achieved").
	Throughput float64
	// Latency of the OK responses, body read included. Open loop: from the due time, so it
	// includes any wait for a slot and the generator's own timer lateness. Closed loop: from
	// the actual send (service time).
	Latency Summary
	// Service is the latency of the OK responses from the actual send: what the server and
	// the connection took, without the wait for a due time or a slot. Closed loop: = Latency.
	Service Summary
	// StartLag is how late requests actually started after their due time (open loop only):
	// the pacer's own lateness plus any wait for a free slot.
	StartLag Summary
}

// Sustained reports whether an open-loop run kept up with its rate: every request due in the
// window was sent and answered OK (nothing dropped, no errors), and the last answer came within
// Duration/10 (at least 50 ms) of the window's end, so no backlog was left to drain.
func (r Result) Sustained() bool {
	return r.Mode == Open && r.OK > 0 && r.Dropped == 0 && r.Errors == 0 && r.OK == r.Scheduled &&
		r.Window-r.Duration <= max(r.Duration/10, 50*time.Millisecond)
}

// ErrorRate is the fraction of started requests that failed.
func (r Result) ErrorRate() float64 {
	if r.Sent == 0 {
		return 0
	}
	return float64(r.Errors) / float64(r.Sent)
}

// NewClient returns an HTTP/1.1 client that keeps up to conns idle connections to each host,
// so that a load run reuses connections instead of opening one per request, and never uses a
// proxy.
func NewClient(conns int) *http.Client {
	if conns < 2 {
		conns = 2
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ErrConfig marks an invalid Config.
var ErrConfig = errors.New("load: invalid config")

func (c *Config) defaults(closed bool) error {
	switch {
	case c.NewRequest == nil:
		return fmt.Errorf("%w: NewRequest is nil", ErrConfig)
	case c.Duration <= 0:
		return fmt.Errorf("%w: Duration must be positive", ErrConfig)
	case c.Warmup < 0:
		return fmt.Errorf("%w: Warmup must not be negative", ErrConfig)
	case !closed && (!(c.Rate > 0) || math.IsInf(c.Rate, 1)):
		return fmt.Errorf("%w: Rate must be a positive number", ErrConfig)
	case closed && c.Concurrency <= 0:
		return fmt.Errorf("%w: Concurrency must be positive", ErrConfig)
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 256
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Expect == nil {
		c.Expect = func(s int) bool { return s >= 200 && s < 300 }
	}
	if c.Client == nil {
		n := c.MaxInFlight
		if closed {
			n = c.Concurrency
		}
		c.Client = NewClient(n)
	}
	return nil
}

// recorder holds the shared counters of one run.
type recorder struct {
	cfg                     *Config
	measureStart            time.Time
	sent, ok, errs, dropped atomic.Int64
	lastDone                atomic.Int64 // UnixNano of the last counted completion
	latency, service, lag   Histogram
	statuses                [600]atomic.Int64
	errOnce                 sync.Once
	errSample               string
	baseCtx                 context.Context
}

func (r *recorder) fail(err error) {
	r.errs.Add(1)
	r.errOnce.Do(func() { r.errSample = err.Error() })
}

// do sends request i and records it when counted; from is where its latency starts.
func (r *recorder) do(i int, from time.Time, counted bool) {
	if counted {
		r.sent.Add(1)
	}
	sent := time.Now()
	ctx, cancel := context.WithTimeout(r.baseCtx, r.cfg.Timeout)
	defer cancel()
	req, err := r.cfg.NewRequest(i)
	if err != nil {
		if counted {
			r.fail(fmt.Errorf("NewRequest(%d): %w", i, err))
		}
		return
	}
	resp, err := r.cfg.Client.Do(req.WithContext(ctx))
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	done := time.Now()
	if !counted {
		return
	}
	for {
		cur := r.lastDone.Load()
		if done.UnixNano() <= cur || r.lastDone.CompareAndSwap(cur, done.UnixNano()) {
			break
		}
	}
	if err != nil {
		if r.baseCtx.Err() != nil {
			err = fmt.Errorf("run cancelled: %w", err)
		}
		r.fail(err)
		return
	}
	if resp.StatusCode >= 100 && resp.StatusCode < len(r.statuses) {
		r.statuses[resp.StatusCode].Add(1)
	}
	if !r.cfg.Expect(resp.StatusCode) {
		r.fail(fmt.Errorf("unexpected status %d for %s %s", resp.StatusCode, req.Method, req.URL.Path))
		return
	}
	r.ok.Add(1)
	r.latency.Record(done.Sub(from))
	r.service.Record(done.Sub(sent))
}

func (r *recorder) result(mode Mode) Result {
	res := Result{
		Mode: mode, Rate: r.cfg.Rate, Sent: r.sent.Load(), OK: r.ok.Load(), Errors: r.errs.Load(),
		Dropped: r.dropped.Load(), ErrorSample: r.errSample, Latency: r.latency.Summary(),
		Service:  r.service.Summary(),
		Statuses: map[int]int64{},
	}
	if mode == Open {
		res.Concurrency = r.cfg.MaxInFlight
		res.Scheduled = res.Sent + res.Dropped
		res.StartLag = r.lag.Summary()
	} else {
		res.Concurrency = r.cfg.Concurrency
		res.Rate = 0
	}
	for code := range r.statuses {
		if n := r.statuses[code].Load(); n > 0 {
			res.Statuses[code] = n
		}
	}
	res.Duration = r.cfg.Duration
	res.Window = r.cfg.Duration
	if last := r.lastDone.Load(); last > 0 {
		if w := time.Unix(0, last).Sub(r.measureStart); w > res.Window {
			res.Window = w
		}
	}
	res.Throughput = float64(res.OK) / res.Window.Seconds()
	return res
}

// Run measures at a fixed arrival rate (open loop). Request i is due at start + i/Rate. One
// pacer goroutine hands each request, at its due time, to whichever of MaxInFlight workers is
// free; when none is, the request waits in a queue and the wait counts in its latency, which
// runs from the due time. Run returns when the window has ended and every started request has
// finished; a cancelled ctx ends it early with the partial result and ctx's error.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(false); err != nil {
		return Result{}, err
	}
	interval := float64(time.Second) / cfg.Rate
	total := int64(math.Ceil((cfg.Warmup + cfg.Duration).Seconds() * cfg.Rate)) // due before end
	warm := int64(math.Ceil(cfg.Warmup.Seconds() * cfg.Rate))                   // due before the window
	start := time.Now().Add(time.Millisecond)
	end := start.Add(cfg.Warmup + cfg.Duration)
	due := func(i int64) time.Time { return start.Add(time.Duration(float64(i) * interval)) }
	rec := &recorder{cfg: &cfg, measureStart: start.Add(cfg.Warmup), baseCtx: ctx}
	drop := func(i int64) {
		if i >= warm {
			rec.dropped.Add(1)
		}
	}

	queue := make(chan int64, min(total, maxQueue))
	var wg sync.WaitGroup
	for range min(int64(cfg.MaxInFlight), total) {
		wg.Go(func() {
			for i := range queue {
				d := due(i)
				now := time.Now()
				// A request that waited for a slot past the end of the window, or longer than
				// MaxLateness, is dropped: the run stays bounded and the loss is counted.
				if late := now.Sub(d); ctx.Err() != nil || now.After(end.Add(endGrace)) ||
					cfg.MaxLateness > 0 && late > cfg.MaxLateness {
					drop(i)
					continue
				}
				if i >= warm {
					rec.lag.Record(now.Sub(d))
				}
				rec.do(int(i), d, i >= warm)
			}
		})
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var i int64
	for ; i < total; i++ {
		if !sleepUntil(ctx, timer, due(i)) {
			break
		}
		select {
		case queue <- i:
		default: // a backlog of maxQueue requests: hopelessly overloaded
			drop(i)
		}
	}
	for ; i < total; i++ { // not handed out: cancelled
		drop(i)
	}
	close(queue)
	wg.Wait()
	return rec.result(Open), ctx.Err()
}

const (
	// maxQueue bounds the requests waiting for a free worker.
	maxQueue = 1 << 16
	// endGrace lets a request due just before the end of the window start a little after it
	// (the pacer itself can be that late) without counting as dropped.
	endGrace = 5 * time.Millisecond
	// coarse is how late the runtime's timers can fire: an idle Go process waits for its next
	// timer in epoll with millisecond resolution, so a 200 µs time.Sleep often takes 1 ms. That
	// lateness would be charged to every open-loop latency, so the pacer sleeps the last
	// stretch before each due time with nanosleep(2), which wakes within about 100 µs. Only the
	// pacer does this: many goroutines blocked in nanosleep would hold the scheduler's Ps and
	// delay the goroutines reading responses.
	coarse = 1500 * time.Microsecond
)

// sleepUntil waits until t, or returns false when ctx ends first.
func sleepUntil(ctx context.Context, timer *time.Timer, t time.Time) bool {
	if d := time.Until(t); d > coarse {
		timer.Reset(d - coarse)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	if d := time.Until(t); d > 0 {
		nanosleep(d)
	}
	return ctx.Err() == nil
}

// Saturate measures the highest throughput (closed loop): Concurrency workers each send the
// next request as soon as their previous one has finished, until the window ends. Latencies are
// service times from each actual send. It returns when every started request has finished.
func Saturate(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.defaults(true); err != nil {
		return Result{}, err
	}
	start := time.Now()
	measureStart := start.Add(cfg.Warmup)
	end := measureStart.Add(cfg.Duration)
	rec := &recorder{cfg: &cfg, measureStart: measureStart, baseCtx: ctx}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				now := time.Now()
				if !now.Before(end) {
					return
				}
				rec.do(int(next.Add(1)-1), now, !now.Before(measureStart))
			}
		})
	}
	wg.Wait()
	return rec.result(Closed), ctx.Err()
}
