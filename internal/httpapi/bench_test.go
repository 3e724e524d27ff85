package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/catalog"
)

// BenchmarkGetVideo measures the hot path through the whole handler chain, without the
// network: auth (cached key), one task read, the view, JSON.
func BenchmarkGetVideo(b *testing.B) {
	e := newVideoEnv(b, "acme")
	e.srv.catalogs = catalog.Static(limitedCatalog(b, nil, nil)) // every limit unlimited: b.N requests on one key
	e.srv.keys = newKeyCache(60e9)
	created := e.post(e.key, `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5}}`)
	var id string
	if created.status != 202 {
		b.Fatal(created.status)
	}
	// The id is read from the answer, not cut at an offset: ids do not all have one length.
	var answer struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.body, &answer); err != nil || answer.ID == "" {
		b.Fatalf("create answer %s: %v", created.body, err)
	}
	id = answer.ID
	h := e.srv.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("GET", "/v1/videos/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkCreateVideo measures a native create through the handler chain: decode, validate,
// price, and the one write transaction (task + reservation, in-flight counters). Every limit is
// unlimited, so the in-flight count is not read.
func BenchmarkCreateVideo(b *testing.B) {
	benchCreate(b, limitedCatalog(b, nil, nil))
}

// BenchmarkCreateVideoLimited is BenchmarkCreateVideo with every limit set (too high to be
// reached): the rate buckets and the in-flight count inside the transaction run too.
func BenchmarkCreateVideoLimited(b *testing.B) {
	high := map[string]string{"requests_per_second": "1000000000", "video_tasks_in_flight": "1000000000"}
	benchCreate(b, limitedCatalog(b, high, high))
}

func benchCreate(b *testing.B, cat *catalog.Catalog) { benchCreateTraced(b, cat, nil) }

func benchCreateTraced(b *testing.B, cat *catalog.Catalog, tr trace.Tracer) {
	e := newVideoEnv(b, "acme")
	e.srv.catalogs = catalog.Static(cat)
	if tr != nil {
		e.srv.tracer = tr
		e.store.(interface{ SetTracer(trace.Tracer) }).SetTracer(tr)
	}
	secret, _ := e.newKey("acme", 0, true)
	h := e.srv.Handler()
	body := `{"model":"acme-video-fast","prompt":"a cat on a windowsill, golden hour","metadata":{"duration":5,"resolution":"720p","ratio":"16:9","generate_audio":true}}`
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("POST", "/v1/videos", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 202 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
