package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

// A contract-valid request a dashscope account cannot serve is refused at submission, naming
// the field; what Wan can make passes.
func TestDashScopeRefusesWhatWanCannotDo(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	seed := int64(3)
	native := func(edit func(*contract.NativeParams)) *contract.VideoRequest {
		n := &contract.NativeParams{Duration: 5, Resolution: "720p", Ratio: "16:9", OutputFormat: "mp4", OmniTaskType: "auto"}
		if edit != nil {
			edit(n)
		}
		return &contract.VideoRequest{Route: contract.RouteNative, Native: n}
	}
	frame := func(r *contract.VideoRequest, role contract.ContentRole) *contract.VideoRequest {
		r.Content = append(r.Content, contract.ContentItem{Type: contract.TypeImage, Role: role, URL: "https://x/a.png"})
		return r
	}
	tests := []struct {
		name  string
		req   *contract.VideoRequest
		param string
	}{
		{"5 s 16:9 at 720p", native(nil), ""},
		{"1080p 3:4 for 10 s with a seed and a watermark", func() *contract.VideoRequest {
			r := native(func(n *contract.NativeParams) {
				n.Resolution, n.Ratio, n.Duration, n.Watermark = "1080p", "3:4", 10, &yes
			})
			r.Seed = &seed
			return r
		}(), ""},
		{"the model's default duration", native(func(n *contract.NativeParams) { n.Duration = -1 }), ""},
		{"adaptive from text is 16:9", native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), ""},
		{"no sound asked", native(func(n *contract.NativeParams) { n.GenerateAudio = &no }), ""},
		{"a first frame", frame(native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), contract.RoleFirstFrame), ""},
		{"no 4k", native(func(n *contract.NativeParams) { n.Resolution = "4k" }), "metadata.resolution"},
		{"no mov", native(func(n *contract.NativeParams) { n.OutputFormat = "mov" }), "metadata.output_format"},
		{"no 21:9", native(func(n *contract.NativeParams) { n.Ratio = "21:9" }), "metadata.ratio"},
		{"no 4:3 at 480p", native(func(n *contract.NativeParams) { n.Resolution, n.Ratio = "480p", "4:3" }), "metadata.ratio"},
		{"no 8 s", native(func(n *contract.NativeParams) { n.Duration = 8 }), "metadata.duration"},
		{"no sound", native(func(n *contract.NativeParams) { n.GenerateAudio = &yes }), "metadata.generate_audio"},
		{"no task type", native(func(n *contract.NativeParams) { n.OmniTaskType = "edit" }), "metadata.omni_reference_task_type"},
		{"no last frame", frame(frame(native(func(n *contract.NativeParams) { n.Ratio = "adaptive" }), contract.RoleFirstFrame), contract.RoleLastFrame), "metadata.content"},
		{"no reference image", frame(native(nil), contract.RoleReferenceImage), "metadata.content"},
		{"production's generation is checked", &contract.VideoRequest{Route: contract.RouteProduction,
			Production: &contract.ProductionParams{Ratio: "21:9", Duration: 5}}, "metadata.ratio"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			param, msg := KindDashScope.Refuse(tt.req)
			if param != tt.param || (param != "" && msg == "") {
				t.Errorf("refused %q (%s), want %q", param, msg, tt.param)
			}
		})
	}
}

const withDashScope = `upstreams:
  - name: wan-intl
    kind: dashscope
    base_url: https://dashscope-intl.aliyuncs.com
    api_key_env: DASHSCOPE_API_KEY
    cost:
      currency: USD
      per_second: {480p: 0.02, 1080p: 0.10}
  - name: local-enhance
    kind: ffmpeg
tenants:
  - id: acme
    name: Acme
    currency: USD
    packages:
      production: {enabled: true, resolutions: [1080p]}
    aliases:
      - alias: acme-wan
        product: native
        family: fast-2.0
        upstream: wan-intl
        model: wan2.2-t2v-plus
      - alias: acme-production
        product: production
        tier: standard
        upstream: wan-intl
        enhance_upstream: local-enhance
        model: wan2.2-t2v-plus
        generate_resolution: 1080p
        enhance_model: up-enhance
    rates:
      native:
        acme-wan: 1.5
      production:
        standard:
          1080p: {no_video_input: 0.20, video_input: 0.22}
`

// A dashscope account loads like any remote account (its key named, never held), serves
// native and production's generation, and is held to the resolutions Wan makes.
func TestDashScopeAccountsLoadAndAreHeldToWansResolutions(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withDashScope))
	if err != nil {
		t.Fatalf("loads: %v", err)
	}
	acc, _ := c.Upstream("wan-intl")
	if acc.Kind != KindDashScope || !acc.Kind.Remote() || acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductEnhancement) {
		t.Fatalf("account %+v: want a remote dashscope account for video generation only", acc)
	}
	if r, ok := acc.Cost.SecondRate("1080p"); !ok || r != 100_000 {
		t.Fatalf("1080p cost %d, %v", r, ok)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"no 2k generation", "generate_resolution: 1080p", "generate_resolution: 2k", `upstream "wan-intl" (kind dashscope) cannot generate at generate_resolution 2k`},
		{"no speech", "      - alias: acme-production", "      - alias: acme-voice\n        product: speech\n        upstream: wan-intl\n        model: x\n      - alias: acme-production", `upstream "wan-intl" (kind dashscope) cannot serve product speech`},
		{"an https base URL", "https://dashscope-intl.aliyuncs.com", "http://dashscope-intl.aliyuncs.com", "base_url must be an https URL"},
		{"a key's place", "    api_key_env: DASHSCOPE_API_KEY\n", "", "give exactly one of api_key_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := parseEdited(t, withDashScope, tc.old, tc.new); !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
}
