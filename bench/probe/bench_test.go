package main

import (
	"context"
	"testing"

	"mediagen/internal/media/probe"
	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/media/safefetch"
)

// BenchmarkProbeURL reports requests and bytes per probe for each shape as
// custom metrics (go test -bench . ./bench/probe/).
func BenchmarkProbeURL(b *testing.B) {
	probetest.RequireFFmpeg(b)
	ctx := context.Background()
	items, err := prepare(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c := safefetch.New(safefetch.Options{AllowLoopback: true})
	defer c.CloseIdleConnections()
	for _, it := range items {
		b.Run(it.name+"/"+it.mode.String(), func(b *testing.B) {
			srv, _ := probetest.Serve(it.path, it.mode)
			defer srv.Close()
			var res probe.Result
			for b.Loop() {
				res, err = probe.ProbeURL(ctx, c, srv.URL+"/media", probe.Options{AllowHTTP: true})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(res.Requests), "requests/probe")
			b.ReportMetric(float64(res.BytesRead), "bytes/probe")
		})
	}
}

// TestRun keeps the program working under go test: one probe per shape.
func TestRun(t *testing.T) {
	probetest.RequireFFmpeg(t)
	var out testWriter
	if err := run(context.Background(), &out, 1); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + string(out))
}

type testWriter []byte

func (w *testWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }
