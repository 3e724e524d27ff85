package safefetch

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

const sampleHost = "samples.mediagen.example"

func sampleHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/clip.mp4" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		http.ServeContent(w, r, "clip.mp4", time.Unix(1, 0), bytes.NewReader([]byte("0123456789")))
	})
}

func TestSamplesAreServedInProcessWithRangesAndNothingIsDialled(t *testing.T) {
	t.Parallel()
	c, rec, res := testClient(t, Options{Samples: &Samples{Host: sampleHost, Handler: sampleHandler()}})
	resp, err := c.Get(context.Background(), "https://"+sampleHost+"/clip.mp4", RequestOptions{Header: http.Header{"Range": {"bytes=2-4"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(b) != "234" || resp.Header.Get("Content-Range") != "bytes 2-4/10" {
		t.Fatalf("got %d %q %q", resp.StatusCode, b, resp.Header.Get("Content-Range"))
	}
	if _, err := c.Get(context.Background(), "https://"+sampleHost+"/missing", RequestOptions{}); err == nil {
		t.Fatal("a missing sample should answer an error status")
	}
	if len(rec.calls()) != 0 || len(res.lookups) != 0 {
		t.Fatalf("dialled %v, looked up %v", rec.calls(), res.lookups)
	}
}

func TestSamplesOpenNothingElse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		url  string
		want error
	}{
		{"loopback stays refused", "https://127.0.0.1/clip.mp4", ErrForbiddenAddress},
		{"localhost stays refused", "https://localhost/clip.mp4", ErrForbiddenAddress},
		{"http to the sample host is not a sample", "http://" + sampleHost + "/clip.mp4", ErrForbiddenScheme},
		{"another port is not a sample", "https://" + sampleHost + ":8443/clip.mp4", ErrForbiddenAddress},
		{"a look-alike host resolves like any name", "https://x" + sampleHost + "/clip.mp4", ErrUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, rec, _ := testClient(t, Options{Samples: &Samples{Host: sampleHost, Handler: sampleHandler()}})
			_, err := c.Get(context.Background(), tt.url, RequestOptions{})
			assertKind(t, err, tt.want)
			if calls := rec.calls(); len(calls) != 0 {
				t.Fatalf("dialled %v", calls)
			}
		})
	}
}

func TestWithoutSamplesTheSampleHostIsAnOrdinaryName(t *testing.T) {
	t.Parallel()
	c, rec, res := testClient(t, Options{})
	_, err := c.Get(context.Background(), "https://"+sampleHost+"/clip.mp4", RequestOptions{})
	if err == nil || !strings.Contains(strings.Join(res.lookups, ","), sampleHost) || len(rec.calls()) != 0 {
		t.Fatalf("err %v, lookups %v, dials %v: want a failed lookup and no dial", err, res.lookups, rec.calls())
	}
}
