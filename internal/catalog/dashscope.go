package catalog

import (
	"fmt"
	"slices"
	"strings"

	"mediagen/internal/contract"
)

// Capabilities of the dashscope kind (the Wan models of DashScope video synthesis), from the
// Wan text-to-video and image-to-video API references (docs/upstreams.md#dashscope cites
// them). The service's own adapter maps a contract request onto them
// (internal/provider/dashscope); anything else is refused at submission here.
var (
	dashscopeResolutions = []string{"480p", "720p", "1080p"}
	// dashscopeSeconds are the durations Wan models make (wan2.2: 5; wan2.5: 5, 10; wan2.6:
	// 5, 10, 15). A model that makes fewer refuses the others at its create (refunded).
	dashscopeSeconds = []int{5, 10, 15}
	// dashscopeRatios are the text-to-video shapes the reference lists sizes for (adaptive:
	// 16:9); at 480p there is no 4:3 or 3:4 size.
	dashscopeRatios    = []string{"adaptive", "16:9", "9:16", "1:1", "4:3", "3:4"}
	dashscopeRatios480 = []string{"adaptive", "16:9", "9:16", "1:1"}
)

// refuseDashScope: a Wan create takes a prompt, a size (text) or a resolution with one
// first-frame image (img_url), a duration, a seed and a watermark flag; it makes MP4 without
// sound (the adapter does not ask for wan2.5's audio).
func refuseDashScope(req *contract.VideoRequest, g genParams) (string, string) {
	res := g.resolution
	if res == "" {
		res = "720p"
	}
	ratios := dashscopeRatios
	if res == "480p" {
		ratios = dashscopeRatios480
	}
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case g.resolution != "" && !slices.Contains(dashscopeResolutions, g.resolution):
		return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use one of " + strings.Join(dashscopeResolutions, ", ") + "."
	case g.ratio != "" && !slices.Contains(ratios, g.ratio):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model at " + res + "; use one of " + strings.Join(ratios, ", ") + "."
	case g.duration != -1 && !slices.Contains(dashscopeSeconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use 5, 10 or 15 seconds.", g.duration)
	case g.audio != nil && *g.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
	case g.taskType != "" && g.taskType != "auto":
		return "metadata.omni_reference_task_type", "metadata.omni_reference_task_type " + g.taskType + " is not available for this model."
	}
	for i, it := range req.Content {
		if it.Type != "image_url" || it.Role != contract.RoleFirstFrame || i > 0 {
			return "metadata.content", "This model takes at most one reference: an image_url with role first_frame."
		}
	}
	return "", ""
}
