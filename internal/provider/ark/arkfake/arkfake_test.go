package arkfake

import (
	"net/http"
	"strings"
	"testing"
)

// The fake's checks are what the adapter's tests rely on: each broken request is recorded.
func TestFakeRecordsEveryBrokenRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"an unknown field", `{"model":"m","content":[{"type":"text","text":"p"}],"fps":24}`, `unknown field "fps"`},
		{"a role of another type", `{"model":"m","content":[{"type":"video_url","role":"first_frame","video_url":{"url":"https://x/v.mp4"}}]}`, "video_url item"},
		{"a string duration", `{"model":"m","content":[{"type":"text","text":"p"}],"duration":"5"}`, "duration = 5, want a integer"},
		{"a missing model", `{"content":[{"type":"text","text":"p"}]}`, "model is missing"},
		{"two texts", `{"model":"m","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, "2 text items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := Start(Config{Key: "k"})
			defer f.Close()
			req, _ := http.NewRequest("POST", f.Base()+"/contents/generations/tasks", strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("Content-Type", "application/json")
			res, err := f.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if v := f.Violations(); res.StatusCode != 400 || len(v) == 0 || !strings.Contains(strings.Join(v, "; "), tc.want) {
				t.Errorf("answer %d, violations %q; want 400 and %q", res.StatusCode, v, tc.want)
			}
		})
	}
}
