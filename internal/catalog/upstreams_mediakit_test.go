package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

func TestMediaKitRefusesWhatItsToolsCannotDoNamingTheField(t *testing.T) {
	t.Parallel()
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name string
		req  *contract.VideoRequest
		want string
	}{
		{"a lite enhancement by resolution is served", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{Resolution: "1080p", FPS: n(30), BitrateLevel: "high"}}, ""},
		{"a professional 12-bit enhancement is served", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{ToolVersion: "professional", ResolutionLimit: 720, BitDepth: n(12)}}, ""},
		{"a standard scene is served", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{ToolVersion: "standard", Resolution: "8k", Scene: "aigc"}}, ""},
		{"a bitrate in kbps is refused", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{Resolution: "1080p", Bitrate: n(4000)}}, "metadata.bitrate"},
		{"an enhance style is refused", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{ToolVersion: "standard", Resolution: "2k", EnhanceStyle: "hd"}}, "metadata.enhance_style"},
		{"16-bit depth is refused", &contract.VideoRequest{Enhancement: &contract.EnhancementParams{ToolVersion: "professional", Resolution: "4k", BitDepth: n(16)}}, "metadata.bit_depth"},
		{"a production bitrate is refused", &contract.VideoRequest{Production: &contract.ProductionParams{Tier: contract.TierStandard, Resolution: "1080p", Bitrate: n(900)}}, "metadata.bitrate"},
		{"a production request with a bitrate level is served", &contract.VideoRequest{Production: &contract.ProductionParams{Tier: contract.TierPro, Resolution: "4k", BitrateLevel: "low", BitDepth: n(10)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := KindMediaKit.Refuse(tc.req); got != tc.want {
				t.Errorf("refused %q, want %q", got, tc.want)
			}
		})
	}
	if !KindMediaKit.Serves(ProductEnhancement) || KindMediaKit.Serves(ProductNative) || KindMediaKit.Serves(ProductProduction) ||
		KindMediaKit.Serves(ProductSpeech) || !KindMediaKit.Remote() {
		t.Error("mediakit serves enhancement only, over the network")
	}
}

// mediakitCatalog binds the enhancement alias and a production alias's enhancement half to a
// mediakit account.
const mediakitCatalog = `upstreams:
  - name: amk
    kind: mediakit
    base_url: https://amk.cn-beijing.volces.com
    api_key_env: MEDIAKIT_API_KEY
tenants:
  - id: acme
    name: Acme
    currency: EUR
    packages:
      production: {enabled: true, resolutions: [1080p]}
    aliases:
      - alias: acme-enhance
        product: enhancement
        route: lite
        upstream: amk
        model: enhance-video-fast
      - alias: acme-prod
        product: production
        tier: standard
        upstream: sandbox
        model: up-gen
        generate_resolution: 720p
        enhance_upstream: amk
        enhance_model: enhance-video
    rates:
      enhancement:
        lite: {up_to_720p: 1, 1080p: 1, 2k: 1, 4k: 1}
      production:
        standard:
          1080p: {no_video_input: 0.10, video_input: 0.12}
`

func TestMediaKitAccountsServeEnhancementAndProductionsSecondHalf(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(mediakitCatalog))
	if err != nil {
		t.Fatal(err)
	}
	acc, ok := c.Upstream("amk")
	if !ok || acc.Kind != KindMediaKit {
		t.Fatalf("the mediakit account: %+v", acc)
	}
	key, err := acc.APIKey(func(string) string { return " k-1 \n" }, nil)
	if err != nil || key != "k-1" {
		t.Errorf("API key %q %v", key, err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"a native alias cannot run on it", "upstream: sandbox", "upstream: amk", `upstream "amk" (kind mediakit) cannot serve product production`},
		{"it needs an https base URL", "base_url: https://amk.cn-beijing.volces.com", "base_url: http://amk.example.com", "base_url must be an https URL"},
		{"it needs one place for its key", "    api_key_env: MEDIAKIT_API_KEY\n", "", "give exactly one of api_key_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(strings.Replace(mediakitCatalog, tc.old, tc.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want %q", err, tc.want)
			}
		})
	}
}
