package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"mediagen/internal/apidoc"
)

// The request schema of POST /v1/videos against the service itself: every body the service
// accepts (202) is valid by docs/openapi.yaml, and every body it refuses for its shape (400) is
// invalid, so a validating client or proxy neither rejects a good request nor lets a malformed
// one through. The validator is internal/apidoc, which checks oneOf and anyOf exactly as JSON
// Schema 2020-12 says; the generated client of TestGeneratedClientRoundTrip sends the first
// body too. Bodies refused by the rules of the alias (the family's resolutions, a route's
// fields) are valid by the document, which cannot know the alias's route: they are listed
// apart. Outside the table, because JSON Schema cannot say them: 5.0 for an integer (JSON
// Schema's integer includes it; the service wants an integer literal).
func TestOpenAPIVideoBodiesAgreeWithService(t *testing.T) {
	e := startE2E(t)
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clip := e.input
	const (
		accepted    = "accepted"     // 202, valid
		shape       = "shape"        // 400, invalid
		aliasRefuse = "alias refuse" // 400, valid: a rule of the alias's route or family
	)
	tests := []struct {
		name, outcome, body string
	}{
		{"native and production at once", accepted, `{"model":"demo-video-standard","prompt":"p","metadata":{"resolution":"1080p","duration":4}}`},
		{"the same body on a production alias", accepted, `{"model":"demo-production-lite","prompt":"p","metadata":{"resolution":"1080p","duration":4}}`},
		{"native text", accepted, `{"model":"demo-video-fast","prompt":"a paper boat"}`},
		{"native with seed and controls", accepted, `{"model":"demo-video-standard","prompt":"p","seed":7,"user":"u","metadata":{"resolution":"1080p","ratio":"16:9","generate_audio":true,"watermark":false,"output_format":"mov"}}`},
		{"native 2.5 with a task type", accepted, `{"model":"demo-video-2.5","prompt":"p","metadata":{"omni_reference_task_type":"auto","duration":-1}}`},
		{"production standard fields", accepted, `{"model":"demo-production-standard","prompt":"p","metadata":{"resolution":"2k","scene":"ugc","enhance_style":"hd","fps":30,"bitrate_level":"low"}}`},
		{"enhancement lite", accepted, `{"model":"demo-enhance-lite","metadata":{"video_url":"` + clip + `","duration":2.5,"resolution":"1080p"}}`},
		{"enhancement with a null legacy prompt", accepted, `{"model":"demo-enhance","prompt":null,"metadata":{"video_url":"` + clip + `","duration":2.5,"resolution_limit":720}}`},
		{"OpenAI's JSON shape", accepted, `{"model":"demo-video-fast","prompt":"p","seconds":"4","size":"1280x720"}`},

		{"no model", shape, `{"prompt":"p"}`},
		{"unknown top-level field", shape, `{"model":"demo-video-standard","prompt":"p","mode":"text"}`},
		{"duration out of range", shape, `{"model":"demo-video-standard","prompt":"p","metadata":{"duration":3}}`},
		{"resolution no route has", shape, `{"model":"demo-video-standard","prompt":"p","metadata":{"resolution":"8k"}}`},
		{"null prompt on generation", shape, `{"model":"demo-video-standard","prompt":null}`},
		{"text mode without a prompt", shape, `{"model":"demo-video-standard","metadata":{"resolution":"720p"}}`},
		{"blank prompt", shape, `{"model":"demo-video-standard","prompt":"  "}`},
		{"seed with a task type", shape, `{"model":"demo-video-2.5","prompt":"p","seed":1,"metadata":{"omni_reference_task_type":"auto"}}`},
		{"enhancement with two resolutions", shape, `{"model":"demo-enhance","metadata":{"video_url":"` + clip + `","duration":2.5,"resolution":"4k","resolution_limit":720}}`},
		{"enhancement without duration", shape, `{"model":"demo-enhance-lite","metadata":{"video_url":"` + clip + `","resolution":"1080p"}}`},
		{"scene with bit_depth", shape, `{"model":"demo-production-pro","prompt":"p","metadata":{"resolution":"1080p","scene":"ugc","bit_depth":10}}`},
		{"OpenAI's shape with metadata", shape, `{"model":"demo-video-fast","prompt":"p","seconds":"4","metadata":{}}`},
		{"duplicate member", shape, `{"model":"demo-video-fast","prompt":"p","prompt":"q"}`},
		{"seed out of the 64-bit range", shape, `{"model":"demo-video-standard","prompt":"p","seed":9223372036854775808}`},

		{"a resolution the fast family does not render", aliasRefuse, `{"model":"demo-video-fast","prompt":"p","metadata":{"resolution":"1080p"}}`},
		{"a production field on a native alias", aliasRefuse, `{"model":"demo-video-standard","prompt":"p","metadata":{"resolution":"1080p","fps":30}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", e.baseURL()+"/v1/videos", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(res.Body)
			res.Body.Close()
			wantStatus := http.StatusBadRequest
			if tt.outcome == accepted {
				wantStatus = http.StatusAccepted
			}
			if res.StatusCode != wantStatus {
				t.Fatalf("the service answered %d, want %d (test bug?): %s", res.StatusCode, wantStatus, answer)
			}
			verr := doc.ValidateRequest("POST", "/v1/videos", req.Header, []byte(tt.body))
			switch {
			case tt.outcome == shape && verr == nil:
				t.Errorf("the service refuses the body for its shape (%s), the document accepts it", answer)
			case tt.outcome != shape && verr != nil:
				t.Errorf("the service %s the body, the document refuses it:\n%v", map[bool]string{true: "accepts", false: "refuses only by the alias's rules"}[tt.outcome == accepted], verr)
			}
		})
	}
}
