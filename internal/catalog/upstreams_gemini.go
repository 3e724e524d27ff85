package catalog

import (
	"fmt"
	"slices"
	"strings"

	"mediagen/internal/contract"
)

// Veo through the Gemini API (docs/upstreams.md#gemini; the fields are those the official
// SDK google.golang.org/genai sends in Gemini API mode): 720p or 1080p, 1080p only at 16:9
// and only on Veo 3; 16:9 or 9:16 (adaptive is sent as 16:9, what it stands for); Veo 3
// makes 8 s, Veo 2 5–8 s; text and one first-frame image. The SDK refuses seed and
// generateAudio in this mode: Veo 3's videos always have sound, Veo 2's never.
var (
	geminiResolutions = []string{"720p", "1080p"}
	geminiRatios      = []string{"16:9", "9:16", "adaptive"}
)

// geminiModel is what one Veo model of the Gemini API makes.
type geminiModel struct {
	seconds    []int
	fullHD     bool // 1080p (at 16:9)
	audio      bool // its videos have sound
	secondsTxt string
}

// geminiModels are the Veo models' capabilities by model-name prefix (ai.google.dev/gemini-api/docs/video).
var geminiModels = []struct {
	prefix string
	m      geminiModel
}{
	{"veo-3.", geminiModel{[]int{8}, true, true, "8 seconds"}},
	{"veo-2.", geminiModel{[]int{5, 6, 7, 8}, false, false, "5 to 8 seconds"}},
}

// geminiModelOf is a model's capabilities; an unknown model gets what every Veo model makes.
func geminiModelOf(model string) geminiModel {
	for _, g := range geminiModels {
		if strings.HasPrefix(model, g.prefix) {
			return g.m
		}
	}
	return geminiModel{[]int{8}, false, false, "8 seconds"}
}

// refuseGemini names what of a request no Veo model of the Gemini API can do; RefuseModel
// adds what the alias's own model cannot.
func refuseGemini(req *contract.VideoRequest, g genParams) (string, string) {
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case g.resolution != "" && !slices.Contains(geminiResolutions, g.resolution):
		return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use 720p or 1080p."
	case !slices.Contains(geminiRatios, g.ratio):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model; use 16:9 or 9:16."
	case g.resolution == "1080p" && g.ratio == "9:16":
		return "metadata.resolution", "metadata.resolution 1080p is available for this model only at 16:9; use 720p for 9:16."
	case g.duration != -1 && (g.duration < 5 || g.duration > 8):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; it makes 5 to 8 seconds.", g.duration)
	case g.watermark != nil && *g.watermark:
		return "metadata.watermark", "metadata.watermark true is not available for this model."
	case req.Seed != nil:
		return "seed", "seed is not available for this model."
	case g.taskType != "" && g.taskType != "auto":
		return "metadata.omni_reference_task_type", "metadata.omni_reference_task_type " + g.taskType + " is not available for this model."
	}
	for i, it := range req.Content {
		if it.Type != "image_url" || it.Role != "first_frame" || i > 0 {
			return "metadata.content", "This model takes at most one reference: an image_url with role first_frame."
		}
	}
	return "", ""
}

// RefuseModel is Refuse for an alias whose account runs the named upstream model: for a kind
// whose models differ (gemini's and vertex's Veo 2 and Veo 3, DashScope's Wan models) it adds
// what that model cannot do.
func (k UpstreamKind) RefuseModel(model string, req *contract.VideoRequest) (param, message string) {
	if param, message = k.Refuse(req); param != "" {
		return param, message
	}
	g, ok := generation(req)
	if !ok {
		return "", ""
	}
	switch k {
	case KindGemini:
		return refuseVeoModel(model, g)
	case KindVertex:
		return refuseVertexModel(model, g)
	case KindDashScope:
		return refuseWanModel(model, req, g)
	}
	return "", ""
}

// refuseVeoModel names what of a request the alias's Veo model cannot make.
func refuseVeoModel(model string, g genParams) (param, message string) {
	m := geminiModelOf(model)
	switch {
	case g.duration != -1 && !slices.Contains(m.seconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; it makes %s.", g.duration, m.secondsTxt)
	case g.resolution == "1080p" && !m.fullHD:
		return "metadata.resolution", "metadata.resolution 1080p is not available for this model; use 720p."
	case g.audio != nil && *g.audio != m.audio && m.audio:
		return "metadata.generate_audio", "metadata.generate_audio false is not available for this model: its videos always have sound."
	case g.audio != nil && *g.audio != m.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
	}
	return "", ""
}
