package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

const withMiniMax = `upstreams:
  - name: hailuo
    kind: minimax
    base_url: https://api.minimax.io
    api_key_env: MINIMAX_API_KEY
  - name: speak
    kind: espeak
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-hailuo
        product: native
        family: fast-2.0
        upstream: hailuo
        model: MiniMax-Hailuo-02
    rates:
      native: {acme-hailuo: 1.2}
`

func TestMiniMaxAccountLoadsAndServesVideoOnly(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withMiniMax))
	if err != nil {
		t.Fatal(err)
	}
	acc, ok := c.Upstream("hailuo")
	if !ok || acc.Kind != KindMiniMax || !acc.Kind.Remote() || !acc.Kind.Serves(ProductNative) || !acc.Kind.Serves(ProductProduction) {
		t.Fatalf("account %+v", acc)
	}
	if acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductEnhancement) {
		t.Fatal("minimax serves video generation only")
	}
	bad := strings.Replace(withMiniMax, "        model: MiniMax-Hailuo-02\n", "        model: MiniMax-Hailuo-02\n      - alias: acme-voice\n        product: speech\n        upstream: hailuo\n        model: m\n", 1)
	if _, err := Parse("c.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), `upstream "hailuo" (kind minimax) cannot serve product speech`) {
		t.Fatalf("a speech alias on minimax: %v", err)
	}
}

func TestMiniMaxRefusesWhatHailuoCannotMake(t *testing.T) {
	t.Parallel()
	yes := true
	seed := int64(1)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 6, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	frame := func(r *contract.VideoRequest, role contract.ContentRole) *contract.VideoRequest {
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: role, URL: "https://x/a.png"})
		return r
	}
	for _, tt := range []struct {
		name  string
		req   *contract.VideoRequest
		param string
	}{
		{"6 s at 720p", native(nil), ""},
		{"10 s at 720p", native(func(n *contract.NativeParams) { n.Duration = 10 }), ""},
		{"the model's default length", native(func(n *contract.NativeParams) { n.Duration = -1 }), ""},
		{"6 s at 1080p", native(func(n *contract.NativeParams) { n.Resolution = "1080p" }), ""},
		{"10 s at 1080p", native(func(n *contract.NativeParams) { n.Resolution = "1080p"; n.Duration = 10 }), "metadata.duration"},
		{"8 s", native(func(n *contract.NativeParams) { n.Duration = 8 }), "metadata.duration"},
		{"480p", native(func(n *contract.NativeParams) { n.Resolution = "480p" }), "metadata.resolution"},
		{"4k", native(func(n *contract.NativeParams) { n.Resolution = "4k" }), "metadata.resolution"},
		{"9:16 from text", native(func(n *contract.NativeParams) { n.Ratio = "9:16" }), "metadata.ratio"},
		{"adaptive from text", native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), "metadata.ratio"},
		{"adaptive follows a first frame", frame(native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), contract.RoleFirstFrame), ""},
		{"no last frame", frame(frame(native(nil), contract.RoleFirstFrame), contract.RoleLastFrame), "metadata.content"},
		{"no reference image", frame(native(nil), contract.RoleReferenceImage), "metadata.content"},
		{"no sound", native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), "metadata.generate_audio"},
		{"no watermark", native(func(n *contract.NativeParams) { n.Watermark = &yes }), "metadata.watermark"},
		{"no mov", native(func(n *contract.NativeParams) { n.OutputFormat = "mov" }), "metadata.output_format"},
		{"no task type", native(func(n *contract.NativeParams) { n.OmniTaskType = "edit" }), "metadata.omni_reference_task_type"},
		{"no seed", func() *contract.VideoRequest { r := native(nil); r.Seed = &seed; return r }(), "seed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := KindMiniMax.Refuse(tt.req)
			if param != tt.param || (param != "" && msg == "") {
				t.Errorf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
}
