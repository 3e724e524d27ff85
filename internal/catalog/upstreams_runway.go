package catalog

import (
	"fmt"
	"slices"

	"mediagen/internal/contract"
)

// Runway's capabilities (docs/upstreams.md#runway), what the gen4 models take from both
// creates of its API (the SDK's TextToVideoCreateParams and ImageToVideoCreateParams): 720p
// frames at 16:9 (1280:720) or 9:16 (720:1280), 5 or 10 seconds, a seed, at most one
// first-frame image; no sound, no watermark choice, no omni task types, mp4 only.
var (
	runwayResolutions = []string{"720p"}
	runwayRatios      = []string{"16:9", "9:16"}
	runwaySeconds     = []int{5, 10}
)

// refuseRunway names what of a request Runway's video API cannot do.
func refuseRunway(req *contract.VideoRequest, g genParams) (string, string) {
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case g.resolution != "" && !slices.Contains(runwayResolutions, g.resolution):
		return "metadata.resolution", "metadata.resolution " + g.resolution + " is not available for this model; use 720p."
	case !slices.Contains(runwayRatios, g.ratio):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model; use 16:9 or 9:16."
	case g.duration != -1 && !slices.Contains(runwaySeconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use 5 or 10 seconds.", g.duration)
	case g.audio != nil && *g.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
	case g.watermark != nil && *g.watermark:
		return "metadata.watermark", "metadata.watermark true is not available for this model."
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
