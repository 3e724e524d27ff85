// Package rest is what the adapters of remote upstreams (ark, openai) share: one HTTP call
// to an account's API with its Bearer key, spaced by the account's request rate, never
// retried by itself — a retried create starts a second paid job, so retries are the job
// engine's, after it recorded the attempt. Errors are typed for the pipeline (provider
// package) and never carry the key. Each adapter maps its upstream's own error codes.
package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/internal/provider"
)

// Config configures a Client.
type Config struct {
	Name    string // the adapter's name in error texts: ark, openai
	BaseURL string
	APIKey  string
	// KeyHeader, when set, is the header the key is sent in as it is (Gemini's
	// x-goog-api-key, ElevenLabs' xi-api-key) instead of Authorization: Bearer.
	KeyHeader string
	// Token, when set, gives the Bearer token of each call instead of APIKey: an account that
	// exchanges its credentials for short-lived tokens (vertex's OAuth2 service account). Its
	// error is the call's, marked provider.ErrNotSent: no byte reached the API.
	Token func(ctx context.Context) (string, error)
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing). It is the account's
	// request rate in one process.
	RequestsPerSecond float64
	// Sign, when set, authenticates each request instead of the key: it is called last, on the
	// finished request, so it can sign its headers and body (Volcengine's AK/SK signature V4
	// for kind ark_assets). APIKey is then not needed.
	Sign func(req *http.Request) error
}

// Client calls one account's API.
type Client struct {
	name string
	base string
	key  string
	hdr  string // KeyHeader
	tok  func(ctx context.Context) (string, error)
	http *http.Client
	sign func(*http.Request) error

	gap  time.Duration // between two calls; 0: none
	mu   sync.Mutex
	next time.Time // when the next call may start
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%s: base URL must be an absolute URL", cfg.Name)
	}
	if cfg.APIKey == "" && cfg.Token == nil && cfg.Sign == nil {
		return nil, fmt.Errorf("%s: no API key", cfg.Name)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := &Client{name: cfg.Name, base: strings.TrimRight(cfg.BaseURL, "/"), key: cfg.APIKey, hdr: cfg.KeyHeader, tok: cfg.Token, http: hc, sign: cfg.Sign}
	if cfg.RequestsPerSecond > 0 {
		c.gap = time.Duration(float64(time.Second) / cfg.RequestsPerSecond)
	}
	return c, nil
}

// pace waits for this call's turn under the request rate. A caller whose context ends first
// gets a transient error: the job engine tries again later.
func (c *Client) pace(ctx context.Context) error {
	if c.gap == 0 {
		return nil
	}
	c.mu.Lock()
	now := time.Now()
	at := c.next
	if at.Before(now) {
		at = now
	}
	c.next = at.Add(c.gap)
	c.mu.Unlock()
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for the account's request rate: %w: %w", c.name, provider.ErrTransient, provider.ErrNotSent)
		case <-t.C:
		}
	}
	return nil
}

// Request is one call.
type Request struct {
	Method, Path string
	Body         io.Reader
	ContentType  string            // of Body
	Accept       string            // default application/json
	Header       map[string]string // extra headers (Idempotency-Key)
}

// StatusError is a non-2xx answer: its status, the start of its body (for the adapter to
// read its error code from, never for a client) and its Retry-After.
type StatusError struct {
	Call       string // "POST /videos"
	Status     int
	Body       []byte
	RetryAfter time.Duration
}

func (e *StatusError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.Call, e.Status) }

// Do makes one call and returns a 2xx response, whose body the caller closes. A transport
// failure is transient; a non-2xx answer is a *StatusError.
func (c *Client) Do(ctx context.Context, r Request) (*http.Response, error) {
	if err := c.pace(ctx); err != nil {
		return nil, err
	}
	call := r.Method + " " + r.Path
	key := c.key
	if c.tok != nil {
		var err error
		if key, err = c.tok(ctx); err != nil {
			return nil, fmt.Errorf("%s %s: %w: %w", c.name, call, err, provider.ErrNotSent)
		}
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, c.base+r.Path, r.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.name, err)
	}
	switch {
	case c.sign != nil:
	case c.hdr != "":
		req.Header.Set(c.hdr, key)
	default:
		req.Header.Set("Authorization", "Bearer "+key)
	}
	accept := r.Accept
	if accept == "" {
		accept = "application/json"
	}
	req.Header.Set("Accept", accept)
	if r.ContentType != "" {
		req.Header.Set("Content-Type", r.ContentType)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	if c.sign != nil {
		if err := c.sign(req); err != nil {
			return nil, fmt.Errorf("%s %s: signing: %w", c.name, call, err)
		}
	}
	res, err := c.http.Do(req)
	if err != nil {
		if notSent(err) {
			return nil, fmt.Errorf("%s %s: %s: %w: %w", c.name, call, c.scrub(err.Error(), key), provider.ErrTransient, provider.ErrNotSent)
		}
		return nil, fmt.Errorf("%s %s: %s: %w", c.name, call, c.scrub(err.Error(), key), provider.ErrTransient)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return nil, &StatusError{Call: c.name + " " + call, Status: res.StatusCode, Body: data, RetryAfter: retryAfter(res.Header.Get("Retry-After"))}
	}
	return res, nil
}

// JSON makes one call and decodes its 2xx JSON answer (at most 1 MiB) into out. A malformed
// or cut answer is transient.
func (c *Client) JSON(ctx context.Context, r Request, out any) error {
	res, err := c.Do(ctx, r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s %s: reading the answer: %w", c.name, r.Method, r.Path, provider.ErrTransient)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s %s: malformed answer: %w", c.name, r.Method, r.Path, provider.ErrTransient)
	}
	return nil
}

// Classify maps a failed call for the pipeline: 401 and 403 a refused account (tasks wait for
// the operator), refused (400, 404, 409, 422: the adapter's permanent error for this
// request, from its own error code), everything else transient — with the upstream's
// Retry-After when it gave one.
func Classify(err error, refused func(se *StatusError) error) error {
	var se *StatusError
	if !errors.As(err, &se) {
		return err
	}
	switch se.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%w: %w", se, provider.ErrAccount)
	case http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
		return refused(se)
	}
	t := fmt.Errorf("%w: %w", se, provider.ErrTransient)
	if se.RetryAfter > 0 {
		return &provider.RetryAfter{After: se.RetryAfter, Err: t}
	}
	return t
}

// notSent: the call failed while dialling, so no byte of the request reached the upstream.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryAfter reads a Retry-After header in seconds, bounded to 10 minutes (0: none).
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, 600)) * time.Second
}

// scrub removes the key (or the call's token) from an error text (a transport error can
// quote a request).
func (c *Client) scrub(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[key]")
}
