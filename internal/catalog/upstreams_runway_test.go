package catalog

import (
	"testing"

	"mediagen/internal/contract"
)

func TestRunwayRefusesWhatItsAPICannotMakeNamingTheField(t *testing.T) {
	yes, no := true, false
	seed := int64(1)
	native := func(n contract.NativeParams) *contract.VideoRequest {
		return &contract.VideoRequest{Native: &n}
	}
	for _, tc := range []struct {
		name string
		req  *contract.VideoRequest
		want string
	}{
		{"16:9 5 s at 720p with a seed is served", func() *contract.VideoRequest {
			r := native(contract.NativeParams{Ratio: "16:9", Duration: 5, Resolution: "720p"})
			r.Seed = &seed
			return r
		}(), ""},
		{"9:16 10 s no sound is served", native(contract.NativeParams{Ratio: "9:16", Duration: 10, Resolution: "720p", GenerateAudio: &no}), ""},
		{"1080p is refused", native(contract.NativeParams{Ratio: "16:9", Duration: 5, Resolution: "1080p"}), "metadata.resolution"},
		{"21:9 is refused", native(contract.NativeParams{Ratio: "21:9", Duration: 5, Resolution: "720p"}), "metadata.ratio"},
		{"adaptive is refused", native(contract.NativeParams{Ratio: "adaptive", Duration: 5, Resolution: "720p"}), "metadata.ratio"},
		{"8 s is refused", native(contract.NativeParams{Ratio: "16:9", Duration: 8, Resolution: "720p"}), "metadata.duration"},
		{"sound is refused", native(contract.NativeParams{Ratio: "16:9", Duration: 5, Resolution: "720p", GenerateAudio: &yes}), "metadata.generate_audio"},
		{"a watermark is refused", native(contract.NativeParams{Ratio: "16:9", Duration: 5, Resolution: "720p", Watermark: &yes}), "metadata.watermark"},
		{"mov is refused", native(contract.NativeParams{Ratio: "16:9", Duration: 5, Resolution: "720p", OutputFormat: "mov"}), "metadata.output_format"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := KindRunway.Refuse(tc.req); got != tc.want {
				t.Fatalf("refused on %q, want %q", got, tc.want)
			}
		})
	}
	if !KindRunway.Serves(ProductNative) || !KindRunway.Serves(ProductProduction) || KindRunway.Serves(ProductSpeech) || !KindRunway.Remote() {
		t.Fatal("runway serves native and production generation, remotely")
	}
}
