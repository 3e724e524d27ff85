package video

import (
	"errors"
	"testing"

	"mediagen/internal/apierr"
	"mediagen/internal/money"
)

// Quote prices a request exactly as Create reserves it, on every route, and writes nothing.
func TestQuoteIsWhatCreateReservesAndWritesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		source float64 // what the prober measures
	}{
		{"native", nativeBody, 0},
		{"native 4k on the standard family", `{"model":"demo-video-standard","prompt":"a kite","metadata":{"duration":-1,"resolution":"4k","ratio":"adaptive"}}`, 0},
		{"production with a reference video measured", `{"model":"demo-production-standard","prompt":"edit @Video1","metadata":{"resolution":"2k","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"https://cdn.example.com/in.mp4"}}],"client_request_id":"p-1"}}`, 7.5},
		{"enhancement on the measured source", `{"model":"demo-enhance","metadata":{"video_url":"https://cdn.example.com/a.mp4","duration":3,"tool_version":"professional","resolution":"8k"}}`, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := demoCaller(t)
			st := newFakeStore(c.Key.ID, 100*money.Scale)
			s := newService(st, tt.source)
			q, err := s.Quote(t.Context(), c, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if len(st.tasks) != 0 || len(st.jobs) != 0 || st.postings != 0 || st.available[c.Key.ID] != 100*money.Scale {
				t.Fatalf("Quote wrote: %d tasks, %d jobs, %d postings", len(st.tasks), len(st.jobs), st.postings)
			}
			if q.Amount <= 0 || q.Currency != "USD" {
				t.Fatalf("quote %+v", q)
			}
			task, created, err := s.Create(t.Context(), c, []byte(tt.body))
			if err != nil || !created {
				t.Fatalf("create: %v", err)
			}
			if task.Reserved != q.Amount || st.reserved[c.Key.ID] != q.Amount {
				t.Errorf("Quote said %s; Create reserved %s (task %s)", q.Amount, st.reserved[c.Key.ID], task.Reserved)
			}
		})
	}
}

// Quote refuses what Create refuses, with the same param, and reads no replay: a used
// client_request_id is Create's business.
func TestQuoteRefusesWhatCreateRefuses(t *testing.T) {
	t.Parallel()
	c := demoCaller(t)
	st := newFakeStore(c.Key.ID, 100*money.Scale)
	s := newService(st, 0)
	for _, body := range []string{
		`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":99}}`,
		`{"model":"demo-speech","prompt":"x"}`,
		`{"model":"demo-video-fast","prompt":"x","metadata":{"resolution":"1080p"}}`,
	} {
		_, qerr := s.Quote(t.Context(), c, []byte(body))
		_, _, cerr := s.Create(t.Context(), c, []byte(body))
		var qe, ce *apierr.Error
		if !errors.As(qerr, &qe) || !errors.As(cerr, &ce) || qe.Kind != ce.Kind || qe.Param != ce.Param || qe.Message != ce.Message {
			t.Errorf("%s: Quote %v, Create %v; want the same refusal", body, qerr, cerr)
		}
	}
	if _, _, err := s.Create(t.Context(), c, []byte(nativeBody)); err != nil {
		t.Fatal(err)
	}
	if q, err := s.Quote(t.Context(), c, []byte(nativeBody)); err != nil || q.Amount <= 0 {
		t.Errorf("Quote of a used client_request_id: %+v, %v; want the price", q, err)
	}
	if len(st.tasks) != 1 || st.postings != 1 {
		t.Errorf("%d tasks, %d postings; want the one create", len(st.tasks), st.postings)
	}
}
