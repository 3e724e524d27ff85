package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

const withGemini = `upstreams:
  - name: veo
    kind: gemini
    base_url: https://generativelanguage.googleapis.com
    api_key_env: GEMINI_API_KEY
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-veo
        product: native
        family: fast-2.0
        upstream: veo
        model: veo-3.0-generate-001
    rates:
      native: {acme-veo: 1.2}
`

func TestGeminiAccountLoadsAndServesVideoOnly(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withGemini))
	if err != nil {
		t.Fatal(err)
	}
	acc, ok := c.Upstream("veo")
	if !ok || acc.Kind != KindGemini || !acc.Kind.Remote() || !acc.Kind.Serves(ProductNative) || !acc.Kind.Serves(ProductProduction) {
		t.Fatalf("account %+v", acc)
	}
	if acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductEnhancement) {
		t.Fatal("gemini serves video generation only")
	}
}

func TestGeminiRefusesWhatTheAliasesVeoModelCannotMake(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	seed := int64(1)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 8, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	frame := func(r *contract.VideoRequest, role contract.ContentRole) *contract.VideoRequest {
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: role, URL: "https://x/a.png"})
		return r
	}
	const veo3, veo2 = "veo-3.0-generate-001", "veo-2.0-generate-001"
	for _, tt := range []struct {
		name, model string
		req         *contract.VideoRequest
		param       string
	}{
		{"Veo 3: 8 s at 720p", veo3, native(nil), ""},
		{"Veo 3: the default length", veo3, native(func(n *contract.NativeParams) { n.Duration = -1 }), ""},
		{"Veo 3: 5 s", veo3, native(func(n *contract.NativeParams) { n.Duration = 5 }), "metadata.duration"},
		{"Veo 3: 1080p at 16:9", veo3, native(func(n *contract.NativeParams) { n.Resolution = "1080p" }), ""},
		{"Veo 3: 1080p at 9:16", veo3, native(func(n *contract.NativeParams) { n.Resolution = "1080p"; n.Ratio = "9:16" }), "metadata.resolution"},
		{"Veo 3: 720p at 9:16", veo3, native(func(n *contract.NativeParams) { n.Ratio = "9:16" }), ""},
		{"Veo 3: silent", veo3, native(func(n *contract.NativeParams) { n.GenerateAudio = &no }), "metadata.generate_audio"},
		{"Veo 3: with sound", veo3, native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), ""},
		{"Veo 3 fast: 8 s", "veo-3.0-fast-generate-001", native(nil), ""},
		{"Veo 2: 5 s", veo2, native(func(n *contract.NativeParams) { n.Duration = 5 }), ""},
		{"Veo 2: 4 s", veo2, native(func(n *contract.NativeParams) { n.Duration = 4 }), "metadata.duration"},
		{"Veo 2: 9 s", veo2, native(func(n *contract.NativeParams) { n.Duration = 9 }), "metadata.duration"},
		{"Veo 2: 1080p", veo2, native(func(n *contract.NativeParams) { n.Resolution = "1080p" }), "metadata.resolution"},
		{"Veo 2: with sound", veo2, native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), "metadata.generate_audio"},
		{"480p", veo3, native(func(n *contract.NativeParams) { n.Resolution = "480p" }), "metadata.resolution"},
		{"1:1", veo3, native(func(n *contract.NativeParams) { n.Ratio = "1:1" }), "metadata.ratio"},
		{"adaptive (sent as 16:9)", veo3, native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), ""},
		{"mov", veo3, native(func(n *contract.NativeParams) { n.OutputFormat = "mov" }), "metadata.output_format"},
		{"a watermark", veo3, native(func(n *contract.NativeParams) { n.Watermark = &yes }), "metadata.watermark"},
		{"a seed", veo3, func() *contract.VideoRequest { r := native(nil); r.Seed = &seed; return r }(), "seed"},
		{"a first frame", veo3, frame(native(nil), contract.RoleFirstFrame), ""},
		{"a last frame", veo3, frame(native(nil), contract.RoleLastFrame), "metadata.content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			param, msg := KindGemini.RefuseModel(tt.model, tt.req)
			if param != tt.param || (param != "" && !strings.Contains(msg, "available") && !strings.Contains(msg, "at most")) {
				t.Fatalf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
}

// A production alias generates at its generate_resolution: Veo 2 makes no 1080p, so such an
// alias is refused at load; Veo 3 at 1080p, and Veo 2 at 720p, load.
func TestGeminiProductionAliasAt1080pNeedsVeo3(t *testing.T) {
	t.Parallel()
	var c Catalog
	gen := UpstreamAccount{Name: "veo", Kind: KindGemini}
	for _, tc := range []struct {
		model, res string
		refused    bool
	}{
		{"veo-3.0-generate-001", "1080p", false},
		{"veo-2.0-generate-001", "720p", false},
		{"veo-2.0-generate-001", "1080p", true},
	} {
		a := &Alias{Name: "acme-prod", Model: tc.model}
		a.GenerateResolution = Resolution(tc.res)
		errs := c.checkProductionGeneration(&Tenant{ID: "acme"}, a, gen)
		if (len(errs) != 0) != tc.refused || tc.refused && !strings.Contains(errs[0].Error(), "cannot generate model "+tc.model+" at generate_resolution 1080p") {
			t.Errorf("%s at %s: %v", tc.model, tc.res, errs)
		}
	}
}
