package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzCreateVideo posts arbitrary bodies through the whole handler chain: whatever the body,
// the answer is never a 5xx and never contains null.
func FuzzCreateVideo(f *testing.F) {
	for _, s := range []string{
		`{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5}}`,
		`{"model":"acme-video-2.5","prompt":"x","metadata":{"omni_reference_task_type":"edit","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://a.example/v.mp4"}}]}}`,
		`{"model":"acme-production-pro","prompt":"x","metadata":{"resolution":"4k","bit_depth":10}}`,
		`{"model":"acme-enhance","metadata":{"video_url":"https://a.example/v.mp4","duration":3.5,"resolution_limit":4320}}`,
		`{"model":"lim-video"}`, `[]`, `null`, `{"model":1}`, `{"model":"acme-video-fast","metadata":{"content":[{}]}}`,
	} {
		f.Add(s)
	}
	e := newVideoEnv(f, "acme")
	h := e.srv.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest("POST", "/v1/videos", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if rec.Code != http.StatusAccepted && !strings.HasPrefix(rec.Body.String(), `{"error":`) {
			t.Fatalf("non-envelope error %d: %s", rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), "null") && !strings.Contains(body, "null") {
			t.Fatalf("null in answer: %s", rec.Body)
		}
	})
}
