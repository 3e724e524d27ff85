package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

// Each Wan model is held to what its row of the API references' model tables makes; a model
// the table does not know only to what the kind takes.
func TestDashScopeRefusesWhatTheAliasesWanModelCannotMake(t *testing.T) {
	t.Parallel()
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 5, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	res := func(r string) func(*contract.NativeParams) {
		return func(n *contract.NativeParams) { n.Resolution = r }
	}
	secs := func(d int) func(*contract.NativeParams) { return func(n *contract.NativeParams) { n.Duration = d } }
	frame := func(r *contract.VideoRequest) *contract.VideoRequest {
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: contract.RoleFirstFrame, URL: "https://x/a.png"})
		return r
	}
	for _, tt := range []struct {
		name, model string
		req         *contract.VideoRequest
		param       string
	}{
		{"wan2.5 t2v: 10 s at 720p", "wan2.5-t2v-preview", native(secs(10)), ""},
		{"wan2.5 t2v: 15 s", "wan2.5-t2v-preview", native(secs(15)), "metadata.duration"},
		{"wan2.6 t2v: 15 s", "wan2.6-t2v", native(secs(15)), ""},
		{"wan2.2 t2v plus: 5 s at 480p", "wan2.2-t2v-plus", native(res("480p")), ""},
		{"wan2.2 t2v plus: 720p", "wan2.2-t2v-plus", native(nil), "metadata.resolution"},
		{"wan2.2 t2v plus: no resolution is 720p", "wan2.2-t2v-plus", native(res("")), "metadata.resolution"},
		{"wan2.2 t2v plus: 10 s", "wan2.2-t2v-plus", native(func(n *contract.NativeParams) { n.Resolution = "1080p"; n.Duration = 10 }), "metadata.duration"},
		{"wan2.2 t2v plus: the default length", "wan2.2-t2v-plus", native(func(n *contract.NativeParams) { n.Resolution = "1080p"; n.Duration = -1 }), ""},
		{"a text-to-video model given a first frame", "wan2.2-t2v-plus", frame(native(res("480p"))), "metadata.content"},
		{"an image-to-video model given none", "wan2.2-i2v-plus", native(res("480p")), "metadata.content"},
		{"an image-to-video model given one", "wan2.2-i2v-plus", frame(native(res("1080p"))), ""},
		{"wan2.2 i2v flash: 720p", "wan2.2-i2v-flash", frame(native(nil)), ""},
		{"wan2.1 t2v plus: 480p", "wanx2.1-t2v-plus", native(res("480p")), "metadata.resolution"},
		{"wan2.1 i2v turbo: 720p", "wanx2.1-i2v-turbo", frame(native(nil)), ""},
		{"an unknown model: what the kind takes", "wan9-future", native(secs(15)), ""},
		{"the kind's own refusals come first", "wan2.6-t2v", native(secs(7)), "metadata.duration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := KindDashScope.RefuseModel(tt.model, tt.req)
			if param != tt.param || (param != "" && !strings.Contains(msg, "model")) {
				t.Fatalf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
}
