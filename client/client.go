package client

import (
	"bytes"
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Options configure a Client. The zero value is the production behaviour.
type Options struct {
	// HTTPClient sends the requests. Nil uses a client whose transport times out dials (10 s)
	// and response headers (3 min: speech answers once the audio exists); bodies are not
	// timed, so long downloads are limited by the caller's context only.
	HTTPClient *http.Client
	// PollInterval is the time between two reads of a task in Wait. Zero means 30 s, the
	// contract's minimum. Lower it only against the sandbox engine.
	PollInterval time.Duration
	// MaxRetries bounds the retries of one request (and the resumptions of one download
	// attempt chain). Zero means 4; a negative value disables retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between retries when the
	// server gave no Retry-After. Zero means 500 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a longer one returns the
	// error at once. Zero means 2 min.
	MaxRetryAfter time.Duration
	// UserAgent is sent on every request; empty means "mediagen-go-client/1".
	UserAgent string
}

// Client calls one mediagen service with one API key. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	apiKey string
	hc     *http.Client
	o      Options
}

// New returns a client for the service at baseURL (e.g. "http://127.0.0.1:8080"; a trailing
// "/v1" is accepted) with the given API key.
func New(baseURL, apiKey string, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("mediagen: base URL %q: want http(s)://host[:port]", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	if apiKey == "" {
		return nil, errors.New("mediagen: an API key is required")
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 3 * time.Minute,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   8,
			ForceAttemptHTTP2:     true,
		}}
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 30 * time.Second
	}
	switch {
	case o.MaxRetries == 0:
		o.MaxRetries = 4
	case o.MaxRetries < 0:
		o.MaxRetries = 0
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.MaxRetryAfter <= 0 {
		o.MaxRetryAfter = 2 * time.Minute
	}
	if o.UserAgent == "" {
		o.UserAgent = "mediagen-go-client/1"
	}
	return &Client{base: u, apiKey: apiKey, hc: o.HTTPClient, o: o}, nil
}

// BaseURL is the service address the client calls.
func (c *Client) BaseURL() string { return c.base.String() }

// safety says which failures a request may be retried after.
type safety int

const (
	// replayable requests may be sent again whatever happened: reads, and creates that carry
	// a client_request_id.
	replayable safety = iota
	// unreplayable requests are retried only when the server cannot have acted on them.
	unreplayable
)

// NewRequestID returns a fresh client_request_id: "mgc-" and 24 random hex digits.
func NewRequestID() string {
	var b [12]byte
	_, _ = cryptorand.Read(b[:]) // never fails (crypto/rand panics instead)
	return "mgc-" + hex.EncodeToString(b[:])
}

// do sends one API call with the retry rules and decodes a 2xx body into out (when non-nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any, s safety) error {
	var payload []byte
	if in != nil {
		var err error
		if payload, err = json.Marshal(in); err != nil {
			return fmt.Errorf("mediagen: encode request: %w", err)
		}
	}
	refusals := 0
	for attempt := 0; ; attempt++ {
		wait, err := c.once(ctx, method, path, payload, out, s)
		if err == nil {
			return nil
		}
		if isRefused(err) {
			// Nothing listens at the address: the service is stopped or the address is wrong,
			// and waiting seconds for it helps nobody. One short retry covers a restart.
			if refusals++; refusals > 1 || attempt >= c.o.MaxRetries {
				return &UnreachableError{BaseURL: c.base.String(), Err: err}
			}
			wait = min(c.backoff(attempt), refusedRetry)
		}
		if wait < 0 || attempt >= c.o.MaxRetries {
			return err
		}
		if wait == 0 {
			wait = c.backoff(attempt)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// once sends one attempt. A non-negative wait means the error may be retried (0: after the
// client's backoff); -1 means it is final.
func (c *Client) once(ctx context.Context, method, path string, payload []byte, out any, s safety) (time.Duration, error) {
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return -1, fmt.Errorf("mediagen: build request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.o.UserAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		err = fmt.Errorf("mediagen: %s %s: %w", method, path, err)
		if s == replayable || isDialError(err) {
			return 0, err
		}
		return -1, err
	}
	defer res.Body.Close()
	// API answers are small; a cap keeps a misbehaving proxy from filling memory.
	raw, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		if ctx.Err() != nil {
			return -1, ctx.Err()
		}
		err = fmt.Errorf("mediagen: %s %s: read answer: %w", method, path, err)
		if s == replayable {
			return 0, err
		}
		return -1, err
	}
	if res.StatusCode >= 200 && res.StatusCode <= 299 {
		if out == nil {
			return -1, nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return -1, fmt.Errorf("mediagen: %s %s: decode answer: %w", method, path, err)
		}
		return -1, nil
	}
	apiErr := parseError(res, raw)
	return c.retryWait(apiErr, s), apiErr
}

// retryWait decides whether an API error may be retried and how long to wait first.
func (c *Client) retryWait(e *Error, s safety) time.Duration {
	retry := false
	switch {
	case e.Status == http.StatusTooManyRequests:
		// Refused before any work: safe for every request.
		retry = true
	case s == unreplayable:
	case e.Status == http.StatusConflict && e.Code == "request_in_progress":
		retry = true
	case e.Status == 500 || e.Status == 502 || e.Status == 503 || e.Status == 504:
		// speech_generation_failed and speech_timeout are the outcome of the request, which a
		// replay would only repeat.
		retry = !strings.HasPrefix(e.Code, "speech_")
	}
	if !retry {
		return -1
	}
	if e.RetryAfter > c.o.MaxRetryAfter {
		return -1
	}
	return e.RetryAfter
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.o.MinBackoff << min(attempt, 20)
	if d <= 0 || d > c.o.MaxBackoff {
		d = c.o.MaxBackoff
	}
	// Full jitter over the upper half keeps retrying clients from moving in step.
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// refusedRetry bounds the wait before the one retry of a refused connection.
const refusedRetry = 250 * time.Millisecond

// isRefused reports a connection refused: nothing listens at the address.
func isRefused(err error) bool {
	return isDialError(err) && errors.Is(err, syscall.ECONNREFUSED)
}

// isDialError reports a failure to connect: the request never reached the server.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// parseRetryAfter reads delay-seconds or an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Int returns a pointer to v, for optional integer fields.
func Int(v int) *int { return &v }

// Int64 returns a pointer to v.
func Int64(v int64) *int64 { return &v }

// Bool returns a pointer to v, for optional boolean fields.
func Bool(v bool) *bool { return &v }

// Float returns a pointer to v.
func Float(v float64) *float64 { return &v }
