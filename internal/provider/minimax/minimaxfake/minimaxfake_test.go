package minimaxfake

import (
	"net/http"
	"strings"
	"testing"
)

func TestFakeRecordsCreatesThatBreakTheReference(t *testing.T) {
	for _, tc := range []struct{ name, body, violation string }{
		{"10 s at 1080P", `{"model":"MiniMax-Hailuo-02","prompt":"p","duration":10,"resolution":"1080P"}`, "duration 10 at 1080P"},
		{"duration 5", `{"model":"MiniMax-Hailuo-02","prompt":"p","duration":5}`, "duration 5"},
		{"lower-case resolution", `{"model":"MiniMax-Hailuo-02","prompt":"p","resolution":"768p"}`, `resolution "768p"`},
		{"unknown field", `{"model":"MiniMax-Hailuo-02","prompt":"p","ratio":"16:9"}`, `unknown field "ratio"`},
		{"unknown model", `{"model":"hailuo","prompt":"p"}`, `model "hailuo"`},
		{"no prompt and no frame", `{"model":"MiniMax-Hailuo-02"}`, "neither prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(Config{Key: "k"})
			defer s.Close()
			req, _ := http.NewRequest(http.MethodPost, s.Base()+"/v1/video_generation", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("Content-Type", "application/json")
			res, err := s.TLSClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			v := s.Violations()
			if len(v) != 1 || !strings.Contains(v[0], tc.violation) {
				t.Fatalf("violations %v, want %q", v, tc.violation)
			}
			if s.Jobs() != 0 {
				t.Fatalf("a refused create made a job")
			}
		})
	}
}
