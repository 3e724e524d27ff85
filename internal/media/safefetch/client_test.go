package safefetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loopbackClient is the sandbox configuration: loopback allowed (any port),
// every dial recorded.
func loopbackClient(t *testing.T, o Options) (*Client, *recorder, *fakeResolver) {
	t.Helper()
	o.AllowLoopback = true
	return testClient(t, o)
}

func get(t *testing.T, c *Client, url string, opt RequestOptions) ([]byte, error) {
	t.Helper()
	resp, err := c.Get(context.Background(), url, opt)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func TestGet_BodyWithinCapIsReturned(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{MaxBytes: 1000})
	body, err := get(t, c, srv.URL, RequestOptions{AllowHTTP: true})
	if err != nil || len(body) != 1000 {
		t.Fatalf("got %d bytes, %v; want 1000 bytes", len(body), err)
	}
}

func TestGet_DeclaredLengthOverCapIsTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{MaxBytes: 999})
	_, err := c.Get(context.Background(), srv.URL, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrTooLarge)
}

func TestGet_StreamedBodyOverCapIsTooLarge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Flushing first forces chunked encoding: no Content-Length to trust.
		w.(http.Flusher).Flush()
		for range 10 {
			io.WriteString(w, strings.Repeat("x", 100))
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{})
	body, err := get(t, c, srv.URL, RequestOptions{AllowHTTP: true, MaxBytes: 999})
	assertKind(t, err, ErrTooLarge)
	if len(body) > 999 {
		t.Fatalf("returned %d bytes past a 999-byte cap", len(body))
	}
}

func TestGet_SlowHeadersTimeOut(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{HeaderTimeout: 100 * time.Millisecond})
	start := time.Now()
	_, err := c.Get(context.Background(), srv.URL, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("header timeout took %v", d)
	}
}

func TestGet_SlowBodyHitsTotalTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		for range 60 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{TotalTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := get(t, c, srv.URL, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrTimeout)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("total timeout took %v", d)
	}
}

func TestGet_HangingConnectTimesOut(t *testing.T) {
	t.Parallel()
	var dials atomic.Int32
	c := New(Options{
		AllowLoopback:  true,
		ConnectTimeout: 100 * time.Millisecond,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			<-ctx.Done() // a SYN that is never answered
			return nil, ctx.Err()
		},
	})
	start := time.Now()
	_, err := c.Get(context.Background(), "http://127.0.0.1:9/", RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrTimeout)
	if d := time.Since(start); d > 2*time.Second || dials.Load() == 0 {
		t.Fatalf("connect timeout took %v after %d dials", d, dials.Load())
	}
}

// redirector answers /hop/N with a redirect to /hop/N+1 until N == last.
func redirector(t *testing.T, last int, hits *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/hop/"))
		if n >= last {
			io.WriteString(w, "done")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n+1), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGet_RedirectsUpToTheCapAreFollowed(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := redirector(t, 3, &hits)
	c, _, _ := loopbackClient(t, Options{MaxRedirects: 3})
	body, err := get(t, c, srv.URL+"/hop/0", RequestOptions{AllowHTTP: true})
	if err != nil || string(body) != "done" {
		t.Fatalf("3 hops: %q, %v", body, err)
	}
}

func TestGet_RedirectsPastTheCapAreRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := redirector(t, 100, &hits)
	c, _, _ := loopbackClient(t, Options{MaxRedirects: 3})
	_, err := c.Get(context.Background(), srv.URL+"/hop/0", RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrRedirect)
	if n := hits.Load(); n != 4 {
		t.Fatalf("server saw %d requests, want 1 + 3 hops", n)
	}
}

func TestGet_NoRedirectsModeRefusesTheFirstRedirect(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := redirector(t, 1, &hits)
	c, _, _ := loopbackClient(t, Options{})
	_, err := c.Get(context.Background(), srv.URL+"/hop/0", RequestOptions{AllowHTTP: true, NoRedirects: true})
	assertKind(t, err, ErrRedirect)
	if n := hits.Load(); n != 1 {
		t.Fatalf("server saw %d requests, want only the first", n)
	}
}

func TestGet_NegativeMaxRedirectsRefusesEveryRedirect(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := redirector(t, 1, &hits)
	c, _, _ := loopbackClient(t, Options{MaxRedirects: -1})
	_, err := c.Get(context.Background(), srv.URL+"/hop/0", RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrRedirect)
}

func TestGet_RedirectFromHTTPSToHTTPIsRefused(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
	}))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/v.mp4", http.StatusFound)
	}))
	defer secure.Close()
	c, _, _ := loopbackClient(t, Options{TLSConfig: tlsConfigFor(t, secure)})
	// Even a request that accepts http must not be downgraded mid-way.
	_, err := c.Get(context.Background(), secure.URL, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrRedirect)
	assertKind(t, err, ErrForbiddenScheme)
	if plainHits.Load() != 0 {
		t.Fatal("the http target was contacted")
	}
}

func TestGet_HTTPSIsFetchedWithTheTestCA(t *testing.T) {
	t.Parallel()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer secure.Close()
	c, _, _ := loopbackClient(t, Options{TLSConfig: tlsConfigFor(t, secure)})
	body, err := get(t, c, secure.URL, RequestOptions{})
	if err != nil || string(body) != "ok" {
		t.Fatalf("https fetch: %q, %v", body, err)
	}
}

func TestGet_CredentialsAreNotCarriedAcrossRedirects(t *testing.T) {
	t.Parallel()
	type seen struct{ auth, cookie, referer, rng string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, "/next", http.StatusFound)
			return
		}
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("Cookie"), r.Header.Get("Referer"), r.Header.Get("Range")}
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{})
	h := http.Header{}
	h.Set("Authorization", "Bearer secret")
	h.Set("Cookie", "session=secret")
	h.Set("Range", "bytes=0-9")
	if _, err := get(t, c, srv.URL+"/start", RequestOptions{AllowHTTP: true, Header: h}); err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.auth != "" || s.cookie != "" || s.referer != "" {
		t.Fatalf("credentials leaked to the next hop: %+v", s)
	}
	if s.rng != "bytes=0-9" {
		t.Fatalf("Range was lost on redirect: %q", s.rng)
	}
}

func TestGet_RedirectFromLoopbackToForbiddenAddressIsRefused(t *testing.T) {
	t.Parallel()
	targets := []struct {
		name, location string
		want           error
	}{
		{"private literal", "http://10.0.0.1/v.mp4", ErrForbiddenAddress},
		{"metadata literal", "http://169.254.169.254/latest/meta-data/", ErrForbiddenAddress},
		{"mapped private", "http://[::ffff:192.168.0.1]/", ErrForbiddenAddress},
		{"nat64 metadata", "http://[64:ff9b::a9fe:a9fe]/", ErrForbiddenAddress},
		{"name resolving to metadata", "http://metadata.example.net/", ErrForbiddenAddress},
		{"decimal spelling of loopback", "http://2130706433/", ErrBadURL},
		{"file scheme", "file:///etc/passwd", ErrForbiddenScheme},
		{"userinfo", "http://u:p@example.com/", ErrBadURL},
	}
	for _, tc := range targets {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", tc.location)
				w.WriteHeader(http.StatusFound)
			}))
			defer srv.Close()
			c, rec, res := loopbackClient(t, Options{})
			res.set("metadata.example.net", "169.254.169.254")
			_, err := c.Get(context.Background(), srv.URL, RequestOptions{AllowHTTP: true})
			assertKind(t, err, tc.want)
			for _, a := range rec.calls() {
				if a != srv.Listener.Addr().String() {
					t.Fatalf("dialled %s besides the loopback test server", a)
				}
			}
		})
	}
}

// DNS rebinding: the name first resolves to a public address, which passes
// the check and is dialled (served in memory, no network); that server
// redirects to the same name on a fresh connection, and the second answer
// is a private address. The second connection must be refused, without the
// private address ever reaching the dialer.
func TestGet_DNSRebindingToPrivateAddressIsRefused(t *testing.T) {
	t.Parallel()
	c, rec, res := testClient(t, Options{})
	res.set("media.example.net", "93.184.216.34", "10.0.0.7")
	var served atomic.Int32
	rec.servePipe(t, "93.184.216.34:80", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Connection", "close") // force a new dial, hence a new lookup
		http.Redirect(w, r, "http://media.example.net/again.mp4", http.StatusFound)
	}))
	_, err := c.Get(context.Background(), "http://media.example.net/v.mp4", RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrForbiddenAddress)
	calls := rec.calls()
	if len(calls) != 1 || calls[0] != "93.184.216.34:80" {
		t.Fatalf("dialled %v, want only the public answer", calls)
	}
	if served.Load() != 1 || len(res.lookups) != 2 {
		t.Fatalf("served %d, lookups %v: the rebinding path was not exercised", served.Load(), res.lookups)
	}
}

// The Control hook of the default dialer refuses a forbidden socket address
// on its own; calling it directly shows this without dialling anything.
func TestControl_RefusesForbiddenSocketAddresses(t *testing.T) {
	t.Parallel()
	c := New(Options{})
	for _, a := range []string{"10.0.0.1:443", "127.0.0.1:443", "[::1]:443", "[::ffff:169.254.169.254]:80", "[64:ff9b::7f00:1]:443", "93.184.216.34:22"} {
		nw := "tcp4"
		if strings.HasPrefix(a, "[") {
			nw = "tcp6"
		}
		assertKind(t, c.control(nw, a, nil), ErrForbiddenAddress)
	}
	if err := c.control("tcp4", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("public address refused: %v", err)
	}
	assertKind(t, c.control("udp4", "93.184.216.34:443", nil), ErrForbiddenAddress)
}

func TestGet_ErrorStatusKeepsTheCode(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "internal detail that must not leak", http.StatusNotFound)
	}))
	defer srv.Close()
	c, _, _ := loopbackClient(t, Options{})
	_, err := c.Get(context.Background(), srv.URL, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrHTTPStatus)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound {
		t.Fatalf("status code not available: %v", err)
	}
	if strings.Contains(PublicMessage(err), "internal detail") {
		t.Fatal("public message leaks the body")
	}
}

func TestGet_UnreachableLoopbackPortIsUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	c, _, _ := loopbackClient(t, Options{})
	_, err := c.Get(context.Background(), addr, RequestOptions{AllowHTTP: true})
	assertKind(t, err, ErrUnreachable)
}

func TestHTTPClient_AppliesTheSameChecks(t *testing.T) {
	t.Parallel()
	c, rec, _ := testClient(t, Options{})
	for _, u := range []string{"http://93.184.216.34/", "https://127.0.0.1/", "https://0x7f.1/"} {
		resp, err := c.HTTPClient().Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("HTTPClient fetched %s", u)
		}
		if PublicMessage(err) == PublicMessage(errors.New("other")) {
			t.Fatalf("error for %s carries no kind: %v", u, err)
		}
	}
	if calls := rec.calls(); len(calls) != 0 {
		t.Fatalf("dialled %v", calls)
	}
}

func TestPublicMessage_NamesTheKindWithoutDetails(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		err := fmt.Errorf("%w: 10.1.2.3 said boom", k.err)
		msg := PublicMessage(err)
		if msg != k.msg || strings.Contains(msg, "10.1.2.3") || strings.Contains(msg, "boom") {
			t.Errorf("PublicMessage(%v) = %q", err, msg)
		}
	}
	if got := PublicMessage(&StatusError{Code: 503}); got != PublicMessage(ErrHTTPStatus) {
		t.Errorf("StatusError message = %q", got)
	}
	if PublicMessage(nil) != "" || PublicMessage(errors.New("x")) == "" {
		t.Error("nil or unknown errors mishandled")
	}
}

// Transport.Proxy is nil: proxy variables in the environment must not send
// a tenant's URL through a proxy, which would dial on our behalf unchecked.
func TestGet_IgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://10.0.0.1:3128")
	t.Setenv("HTTPS_PROXY", "http://10.0.0.1:3128")
	t.Setenv("NO_PROXY", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "direct") }))
	defer srv.Close()
	c, rec, _ := loopbackClient(t, Options{})
	if c.transport.Proxy != nil {
		t.Fatal("transport has a proxy function")
	}
	body, err := get(t, c, srv.URL, RequestOptions{AllowHTTP: true})
	if err != nil || string(body) != "direct" {
		t.Fatalf("%q, %v", body, err)
	}
	for _, a := range rec.calls() {
		if a != srv.Listener.Addr().String() {
			t.Fatalf("dialled %s", a)
		}
	}
}

// A request's Hosts bound the URL and every redirect hop: an upstream's result link is read
// only from the account's result hosts.
func TestGet_HostsBoundTheURLAndEveryHop(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := redirector(t, 0, &hits)
	hop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/hop/0", http.StatusFound)
	}))
	t.Cleanup(hop.Close)
	c, _, _ := loopbackClient(t, Options{MaxRedirects: 3})
	only := func(allowed string) func(string) bool { return func(h string) bool { return h == allowed } }

	if body, err := get(t, c, srv.URL+"/hop/0", RequestOptions{AllowHTTP: true, Hosts: only("127.0.0.1")}); err != nil || string(body) != "done" {
		t.Fatalf("an allowed host: %q %v", body, err)
	}
	before := hits.Load()
	_, err := c.Get(context.Background(), srv.URL+"/hop/0", RequestOptions{AllowHTTP: true, Hosts: only("cdn.example.com")})
	assertKind(t, err, ErrForbiddenHost)
	if hits.Load() != before {
		t.Error("a host outside the list was contacted")
	}
	_, err = c.Get(context.Background(), hop.URL, RequestOptions{AllowHTTP: true, Hosts: only("127.0.0.1")})
	assertKind(t, err, ErrForbiddenHost)
}
