package catalog

import (
	"fmt"
	"slices"

	"mediagen/internal/contract"
)

// MiniMax Hailuo's capabilities (docs/upstreams.md#minimax): 720p (sent as its 768P tier) and
// 1080p; 6 or 10 seconds, 10 only below 1080p; 16:9 from text, or the first frame's shape;
// one first-frame image; no sound, seed, watermark choice or omni task types.
var (
	minimaxResolutions = []string{"720p", "1080p"}
	minimaxSeconds     = []int{6, 10}
)

// minimaxMaxSecondsAt1080p: the API makes 10 s videos only at 768P.
const minimaxMaxSecondsAt1080p = 6

// refuseMiniMax names what of a request MiniMax's video API cannot do.
func refuseMiniMax(req *contract.VideoRequest, g genParams) (string, string) {
	res := g.resolution
	switch {
	case g.outputFormat == "mov":
		return "metadata.output_format", "metadata.output_format mov is not available for this model; use mp4 (the default)."
	case res != "" && !slices.Contains(minimaxResolutions, res):
		return "metadata.resolution", "metadata.resolution " + res + " is not available for this model; use 720p or 1080p."
	case g.ratio != "16:9" && !(g.ratio == "adaptive" && firstFrame(req)):
		return "metadata.ratio", "metadata.ratio " + g.ratio + " is not available for this model; use 16:9 (or adaptive with a first frame)."
	case g.duration != -1 && !slices.Contains(minimaxSeconds, g.duration):
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use 6 or 10 seconds.", g.duration)
	case res == "1080p" && g.duration > minimaxMaxSecondsAt1080p:
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available at 1080p for this model; use 6 seconds, or 720p for 10.", g.duration)
	case g.audio != nil && *g.audio:
		return "metadata.generate_audio", "metadata.generate_audio true is not available for this model: its videos have no sound."
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
