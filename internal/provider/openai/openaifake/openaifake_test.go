package openaifake

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

// The fake's checks are what the adapter's tests rely on: each broken request is recorded.
func TestFakeRecordsEveryBrokenRequest(t *testing.T) {
	t.Parallel()
	form := func(fields map[string]string) (string, *bytes.Buffer) {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		for k, v := range fields {
			_ = w.WriteField(k, v)
		}
		_ = w.Close()
		return w.FormDataContentType(), &b
	}
	for _, tc := range []struct {
		name   string
		fields map[string]string
		json   string
		want   string
	}{
		{"seconds the API does not take", map[string]string{"prompt": "p", "model": "m", "seconds": "5"}, "", `seconds "5"`},
		{"a size the API does not take", map[string]string{"prompt": "p", "model": "m", "size": "640x480"}, "", `size "640x480"`},
		{"an unknown field", map[string]string{"prompt": "p", "model": "m", "seed": "1"}, "", `unknown field "seed"`},
		{"no prompt", map[string]string{"model": "m"}, "", "prompt and model are required"},
		{"a JSON create", nil, `{"prompt":"p","model":"m"}`, "want multipart/form-data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := Start(Config{Key: "k"})
			defer f.Close()
			ct, body := "application/json", bytes.NewBufferString(tc.json)
			if tc.fields != nil {
				ct, body = form(tc.fields)
			}
			req, _ := http.NewRequest("POST", f.Base()+"/videos", body)
			req.Header.Set("Authorization", "Bearer k")
			req.Header.Set("Content-Type", ct)
			res, err := f.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if v := f.Violations(); res.StatusCode != 400 || !strings.Contains(strings.Join(v, "; "), tc.want) {
				t.Errorf("answer %d, violations %q; want 400 and %q", res.StatusCode, v, tc.want)
			}
		})
	}
}
