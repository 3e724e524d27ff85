package safefetch

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Client is safe for concurrent use. Build one per policy with New and
// share it.
type Client struct {
	opts      Options
	policy    *policy
	dial      DialFunc
	transport *http.Transport
	guarded   http.RoundTripper
}

// Response is a 2xx answer. Body is capped (reading past the cap fails with
// ErrTooLarge) and must be closed; closing it also ends the request's total
// timeout.
type Response struct {
	StatusCode    int
	Header        http.Header
	ContentLength int64 // -1 when unknown
	Body          io.ReadCloser
}

// New builds a client. See Options for the defaults.
func New(o Options) *Client {
	o = o.withDefaults()
	c := &Client{opts: o, policy: newPolicy(o)}
	c.dial = o.DialContext
	if c.dial == nil {
		d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: c.control}
		c.dial = d.DialContext
	}
	tlsConf := o.TLSConfig
	if tlsConf == nil {
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	c.transport = &http.Transport{
		Proxy:                  nil, // a proxy would dial for us and bypass the address check
		DialContext:            c.dialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    o.ConnectTimeout,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// Byte ranges must address the stored bytes, not a gzip stream.
		DisableCompression: true,
		ForceAttemptHTTP2:  true,
	}
	c.guarded = &guardTransport{c: c}
	return c
}

type reqOptsKey struct{}

// reqSettings travel in the request context so the guard and the redirect
// policy see the per-request choices on every hop.
type reqSettings struct {
	allowHTTP   bool
	noRedirects bool
	maxBytes    int64
	hosts       func(host string) bool // nil: any host the policy allows
}

func (c *Client) settings(ctx context.Context) reqSettings {
	if s, ok := ctx.Value(reqOptsKey{}).(reqSettings); ok {
		return s
	}
	return reqSettings{allowHTTP: c.opts.AllowHTTP, noRedirects: c.opts.MaxRedirects < 0, maxBytes: c.opts.MaxBytes}
}

// Get fetches rawURL under the client's policy. Non-2xx answers return a
// *StatusError (ErrHTTPStatus) and no Response.
func (c *Client) Get(ctx context.Context, rawURL string, opt RequestOptions) (*Response, error) {
	u, err := c.Check(rawURL, opt.AllowHTTP)
	if err != nil {
		return nil, err
	}
	s := reqSettings{
		allowHTTP:   opt.AllowHTTP || c.opts.AllowHTTP,
		noRedirects: opt.NoRedirects || c.opts.MaxRedirects < 0,
		maxBytes:    c.opts.MaxBytes,
		hosts:       opt.Hosts,
	}
	if opt.MaxBytes > 0 {
		s.maxBytes = opt.MaxBytes
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.TotalTimeout)
	ctx = context.WithValue(ctx, reqOptsKey{}, s)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w: cannot build request", ErrBadURL)
	}
	for k, vs := range opt.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("User-Agent", "mediagen-fetch/1")
	// No http.Client.Timeout here: ctx carries the total timeout and must
	// stay alive until the caller closes the body.
	hc := &http.Client{Transport: c.guarded, CheckRedirect: c.checkRedirect}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		return nil, classify(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Drain a little so a keep-alive connection can be reused, but
		// never read an error page in full.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		cancel()
		return nil, &StatusError{Code: resp.StatusCode}
	}
	body := &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return &Response{StatusCode: resp.StatusCode, Header: resp.Header, ContentLength: resp.ContentLength, Body: body}, nil
}

// HTTPClient returns an *http.Client with the same guarantees as Get (URL
// and address checks on every hop, redirect policy, capped bodies, timeouts)
// for code that needs the standard interface. Non-2xx answers are returned
// as responses, as net/http does.
func (c *Client) HTTPClient() *http.Client {
	return &http.Client{
		Transport:     c.guarded,
		CheckRedirect: c.checkRedirect,
		Timeout:       c.opts.TotalTimeout,
	}
}

// checkRedirect rechecks each hop. The URL and address checks themselves run
// in guardTransport and at dial time, for the first request too.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	s := c.settings(req.Context())
	if s.noRedirects {
		return fmt.Errorf("%w: redirects are not accepted for this URL", ErrRedirect)
	}
	if len(via) > c.opts.MaxRedirects {
		return fmt.Errorf("%w: more than %d redirects", ErrRedirect, c.opts.MaxRedirects)
	}
	for _, prev := range via {
		if prev.URL.Scheme == "https" && req.URL.Scheme != "https" {
			return fmt.Errorf("%w: %w: redirect from https to %s", ErrRedirect, ErrForbiddenScheme, req.URL.Scheme)
		}
	}
	// net/http keeps these on same-host hops; the next hop may be anyone.
	for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie", "Referer"} {
		req.Header.Del(h)
	}
	return nil
}

// guardTransport checks every request URL (first request and each hop) and
// caps every response body, whichever client API issued the request.
type guardTransport struct{ c *Client }

func (g *guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	s := g.c.settings(req.Context())
	err := g.c.checkURL(req.URL, s.allowHTTP)
	if err == nil && s.hosts != nil && !s.hosts(req.URL.Hostname()) {
		err = fmt.Errorf("%w: %s", ErrForbiddenHost, req.URL.Hostname())
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	var resp *http.Response
	if g.c.opts.Samples.serves(req.URL) {
		resp, err = g.c.opts.Samples.roundTrip(req) // opt-in sandbox samples; see Samples
	} else {
		resp, err = g.c.transport.RoundTrip(req)
	}
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > s.maxBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: declared %d bytes, cap %d", ErrTooLarge, resp.ContentLength, s.maxBytes)
	}
	resp.Body = newCappedBody(resp.Body, s.maxBytes)
	return resp, nil
}

// CloseIdleConnections releases pooled connections (tests, shutdown).
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }
