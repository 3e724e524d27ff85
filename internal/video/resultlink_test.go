package video

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"mediagen/internal/contract"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// linkGenerator is an upstream whose every job has succeeded with one result link.
type linkGenerator struct{ link string }

func (g linkGenerator) SubmitGeneration(context.Context, provider.GenerateRequest) (string, error) {
	return "job-1", nil
}

func (g linkGenerator) PollGeneration(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusSucceeded, Output: &provider.Output{Source: provider.Source{URL: g.link}, ContentType: "video/mp4"}}, nil
}

// dialLog records what the fetch client dialled; only loopback is dialled for real, so the
// test never sends a packet elsewhere.
type dialLog struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialLog) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, errors.New("test dialer: not dialling a non-loopback address")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}

// A result link the fetch policy refuses — a metadata address, another scheme, loopback, a
// redirect to one of them — will be refused the same way on every try: the task fails at the
// first refusal (refunded by its terminal state) and counts an upstream error of kind
// result_host, instead of re-polling the upstream for minutes. Nothing outside loopback is
// ever dialled.
func TestRefusedResultLinkFailsTheTaskAtOnce(t *testing.T) {
	t.Parallel()
	redirect := func(to string) string {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, to, http.StatusFound)
		}))
		t.Cleanup(srv.Close)
		return srv.URL + "/result.mp4"
	}
	loopback := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused link was read: %s", r.URL)
	}))
	t.Cleanup(loopback.Close)

	for _, tc := range []struct {
		name, link    string
		allowLoopback bool // the first hop of the redirect cases lives on loopback
	}{
		{"a metadata address over http", "http://169.254.169.254/latest/meta-data/", false},
		{"a metadata address over https", "https://169.254.169.254/latest/meta-data/", false},
		{"a file URL", "file:///etc/passwd", false},
		{"loopback when loopback is not allowed", loopback.URL + "/result.mp4", false},
		{"a private address", "https://10.0.0.1/result.mp4", false},
		{"credentials in the link", "https://user:pw@cdn.example.com/result.mp4", false},
		{"a redirect to a metadata address", redirect("https://169.254.169.254/latest/meta-data/"), true},
		{"a redirect to a file URL", redirect("file:///etc/passwd"), true},
		{"a redirect that downgrades to http", redirect("http://cdn.example.com/result.mp4"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var dials dialLog
			errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "upstream_errors_total"}, []string{"route", "upstream", "call", "kind"})
			p := &Pipeline{
				Upstreams:      map[string]Upstream{"ark-main": {Generator: linkGenerator{link: tc.link}}},
				Fetch:          safefetch.New(safefetch.Options{AllowLoopback: tc.allowLoopback, DialContext: dials.dial, TLSConfig: loopback.Client().Transport.(*http.Transport).TLSClientConfig}),
				UpstreamErrors: errs,
			}
			req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
				Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}}, Upstream: "ark-main", Model: "m"})
			c := store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusInProgress, Request: req, Pricing: []byte(`{}`)}}
			c.Step, c.State = phaseGenPoll, []byte(`{"gen_job":"job-1"}`)

			out, err := p.Step(t.Context(), c, func(Outcome) error { return nil })
			if err != nil {
				t.Fatalf("the step answered an error (the task would be retried): %v", err)
			}
			if out.Final == nil || out.Final.Status != store.StatusFailed || out.Final.ErrorCode != "video_generation_failed" || out.Final.Charge != 0 {
				t.Fatalf("outcome %+v; want the task failed with nothing charged", out.Final)
			}
			var m dto.Metric
			if err := errs.WithLabelValues("native", "ark-main", "poll", "result_host").Write(&m); err != nil {
				t.Fatal(err)
			}
			if n := m.GetCounter().GetValue(); n != 1 {
				t.Errorf("upstream_errors_total{kind=result_host} = %v, want 1", n)
			}
			for _, a := range dials.addrs {
				if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
					t.Errorf("dialled %s", a)
				}
				if !tc.allowLoopback || strings.HasSuffix(a, ":"+strings.Split(loopback.URL, ":")[2]) {
					t.Errorf("dialled %s: the refused link's server was reached", a)
				}
			}
		})
	}
}
