package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"mediagen/internal/jobs"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// Schedule is when a failed delivery is tried again: First × 2^(n-1), capped at Max, with
// ±20% jitter so that the retries of many deliveries spread out, Attempts tries in all.
type Schedule struct {
	First, Max time.Duration
	Attempts   int
}

// DefaultSchedule: 10 s doubling to 12 h, 18 attempts, about 3 days from the first to the last
// (the 17 waits sum to 10 s × (2^13 − 1) ≈ 22.8 h, then 4 × 12 h).
var DefaultSchedule = Schedule{First: 10 * time.Second, Max: 12 * time.Hour, Attempts: 18}

// DefaultDisableAfter: an endpoint whose last 5 deliveries were all given up (each after its
// whole schedule) is disabled.
const DefaultDisableAfter = 5

// Bounds of one attempt.
const (
	connectTimeout = 5 * time.Second
	attemptTimeout = 15 * time.Second // request sent to answer read
	maxAnswerBytes = 4 << 10          // what is read of the receiver's answer, then dropped
	maxRetryAfter  = 12 * time.Hour
	// noDeclaredCap keeps the client from refusing an answer for its declared length: only its
	// status counts, and no more than maxAnswerBytes of it is ever read.
	noDeclaredCap = 1 << 50
)

// NewClient is the SSRF-safe client deliveries use: https to public addresses on 443 (opts
// may allow loopback and http for tests and development), every redirect hop rechecked,
// short timeouts, a small bounded read.
func NewClient(opts safefetch.Options) *safefetch.Client {
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = connectTimeout
	}
	if opts.HeaderTimeout == 0 {
		opts.HeaderTimeout = attemptTimeout
	}
	if opts.TotalTimeout == 0 {
		opts.TotalTimeout = attemptTimeout
	}
	opts.MaxBytes = noDeclaredCap
	return safefetch.New(opts)
}

func (s *Service) schedule() Schedule {
	if s.Schedule != nil {
		return *s.Schedule
	}
	return DefaultSchedule
}

// wait is the delay after failed attempt n (1-based).
func (sc Schedule) wait(n int) time.Duration {
	d := sc.First
	for i := 1; i < n && d < sc.Max; i++ {
		d *= 2
	}
	d = min(d, sc.Max)
	return d - d/5 + time.Duration(rand.Int64N(int64(2*d/5)+1))
}

// Kinds is the delivery kind, to register on the engine of every role that runs jobs.
func (s *Service) Kinds() []jobs.Kind {
	// Retries are scheduled by the handler itself (the delivery's own attempt count, its
	// Retry-After): a run returns an error only when the database failed.
	// The log's retention sweep is one periodic job for the whole cluster (the shared queue).
	return []jobs.Kind{{Name: Kind, Handler: s, Workers: 16, Timeout: 2 * attemptTimeout, MaxAttempts: 20},
		{Name: SweepKind, Handler: jobs.Periodic(s.SweepLog), Every: sweepEvery, Workers: 1, Timeout: 10 * time.Minute}}
}

// PerEndpoint is how many attempts to one endpoint run at once in a process: a slow endpoint
// holds at most this many of the kind's workers, the rest serve other endpoints and tenants.
const PerEndpoint = 4

// busyWait is when a delivery whose endpoint is at its bound is looked at again (no attempt
// is made or counted).
const busyWait = 200 * time.Millisecond

// acquire takes one of the endpoint's places in this process; false when all are taken.
func (s *Service) acquire(endpointID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight == nil {
		s.inFlight = map[string]int{}
	}
	if s.inFlight[endpointID] >= PerEndpoint {
		return false
	}
	s.inFlight[endpointID]++
	return true
}

func (s *Service) release(endpointID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight[endpointID]--; s.inFlight[endpointID] <= 0 {
		delete(s.inFlight, endpointID)
	}
}

// Run makes one attempt of a delivery and records it with its next step, under the lease.
func (s *Service) Run(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
	d, err := s.Store.WebhookDelivery(ctx, j.Ref)
	if errors.Is(err, store.ErrNotFound) {
		return jobs.Outcome{Done: true}, nil
	}
	if err != nil {
		return jobs.Outcome{}, err
	}
	if d.Status != store.DeliveryPending {
		return jobs.Outcome{Done: true}, nil
	}
	now := s.now()
	a := store.WebhookAttempt{DeliveryID: d.ID, N: d.Attempts + 1, At: now}
	ep, err := s.Store.WebhookEndpoint(ctx, d.TenantID, d.EndpointID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.drop(d, a, "endpoint deleted"), nil
	case err != nil:
		return jobs.Outcome{}, err
	case !s.Enabled(d.TenantID):
		return s.drop(d, a, "webhooks switched off"), nil
	case ep.Status != store.WebhookEnabled:
		return s.drop(d, a, "endpoint disabled"), nil
	}
	if !s.acquire(ep.ID) {
		return jobs.Outcome{RunIn: busyWait}, nil
	}
	status, retryAfter, sendErr := s.send(ctx, ep, d, now)
	s.release(ep.ID)
	a.StatusCode, a.Latency = status, s.now().Sub(now)
	if sendErr == nil {
		s.metrics.count(outcomeDelivered)
		return jobs.Outcome{Done: true, Apply: func(ctx context.Context, tx store.Tx) error {
			if err := tx.RecordWebhookAttempt(ctx, a, store.DeliveryDelivered); err != nil {
				return err
			}
			return s.endpointRun(ctx, tx, ep, true)
		}}, nil
	}
	a.Error = sendErr.Error()
	refused := safefetch.Refused(sendErr)
	if refused {
		s.metrics.count(outcomeRefused)
	}
	sc := s.schedule()
	if a.N >= sc.Attempts {
		if !refused {
			s.metrics.count(outcomeGaveUp)
		}
		s.log().Warn("webhook delivery given up", "delivery", d.ID, "endpoint", ep.ID, "attempts", a.N, "err", a.Error)
		return jobs.Outcome{Done: true, Apply: func(ctx context.Context, tx store.Tx) error {
			if err := tx.RecordWebhookAttempt(ctx, a, store.DeliveryFailed); err != nil {
				return err
			}
			return s.endpointRun(ctx, tx, ep, false)
		}}, nil
	}
	if !refused {
		s.metrics.count(outcomeRetry)
	}
	in := max(sc.wait(a.N), min(retryAfter, maxRetryAfter))
	return jobs.Outcome{RunIn: in, Apply: func(ctx context.Context, tx store.Tx) error {
		return tx.RecordWebhookAttempt(ctx, a, store.DeliveryPending)
	}}, nil
}

// GiveUp implements jobs.Handler: only a database that kept failing gets here; the delivery
// stays pending in its log, and its job ends.
func (s *Service) GiveUp(ctx context.Context, j jobs.Job, cause error) jobs.Outcome {
	s.log().Error("webhook delivery job given up", "delivery", j.Ref, "err", cause)
	return jobs.Outcome{Done: true}
}

// drop ends a delivery that can no longer be sent, with its reason in the log.
func (s *Service) drop(d store.WebhookDelivery, a store.WebhookAttempt, why string) jobs.Outcome {
	s.metrics.count(outcomeDropped)
	a.Error = why
	return jobs.Outcome{Done: true, Apply: func(ctx context.Context, tx store.Tx) error {
		return tx.RecordWebhookAttempt(ctx, a, store.DeliveryFailed)
	}}
}

// endpointRun resets the endpoint's failure run on a delivery, extends it on a delivery
// given up, and disables the endpoint when the run reaches DisableAfter.
func (s *Service) endpointRun(ctx context.Context, tx store.Tx, ep store.WebhookEndpoint, delivered bool) error {
	cur, err := tx.WebhookEndpointForUpdate(ctx, ep.TenantID, ep.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	if delivered {
		if cur.FailureRun == 0 {
			return nil
		}
		cur.FailureRun = 0
	} else {
		cur.FailureRun++
		if cur.FailureRun >= s.disableAfter() && cur.Status == store.WebhookEnabled {
			cur.Status = store.WebhookDisabled
			s.log().Warn("webhook endpoint disabled after a run of failed deliveries", "endpoint", ep.ID, "tenant_id", ep.TenantID, "run", cur.FailureRun)
		}
	}
	return tx.UpdateWebhookEndpoint(ctx, cur)
}

// secrets are the ones that sign an attempt at now: the current one, and the one a rotation
// kept until its expiry.
func secrets(ep store.WebhookEndpoint, now time.Time) []string {
	out := []string{ep.Secret}
	if ep.PrevSecret != "" && now.Before(ep.PrevUntil) {
		out = append(out, ep.PrevSecret)
	}
	return out
}

// sendError shows only the kind of a failed send (the raw error may name addresses) and
// keeps the cause for errors.Is (safefetch.Refused).
type sendError struct{ cause error }

func (e sendError) Error() string { return safefetch.PublicMessage(e.cause) }
func (e sendError) Unwrap() error { return e.cause }

// errStatus is a non-2xx answer.
type errStatus int

func (e errStatus) Error() string { return "answered HTTP " + strconv.Itoa(int(e)) }

// send makes one signed POST and reads at most maxAnswerBytes of the answer. It returns the
// status (0 without an answer), the Retry-After of a 429 or 503, and nil only for a 2xx. The
// error's text is short and carries no address: it is kept in the delivery log.
func (s *Service) send(ctx context.Context, ep store.WebhookEndpoint, d store.WebhookDelivery, now time.Time) (int, time.Duration, error) {
	return post(ctx, s.Client, s.timeout(), ep.URL, d.EventID, secrets(ep, now), d.Payload, now)
}

func (s *Service) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return attemptTimeout
}

func post(ctx context.Context, c *safefetch.Client, timeout time.Duration, url, id string, secrets []string, body []byte, now time.Time) (int, time.Duration, error) {
	if c == nil {
		return 0, 0, errors.New("no delivery client configured")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, fmt.Errorf("%w: the URL does not parse", safefetch.ErrBadURL)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mediagen-webhooks/1")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sign(secrets, id, now, body))
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", safefetch.ErrTimeout, err)
		}
		return 0, 0, sendError{err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp.StatusCode, 0, nil
	}
	var after time.Duration
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		after = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	return resp.StatusCode, after, errStatus(resp.StatusCode)
}

// retryAfter reads seconds or an HTTP date; anything else is no wait.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
