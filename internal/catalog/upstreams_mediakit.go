package catalog

import (
	"slices"
	"strconv"

	"mediagen/internal/contract"
)

// AI MediaKit's enhancement tools (docs/upstreams.md#mediakit; Volcengine's "提交画质增强
// (标准版和专业版)任务 API" and "(极速版)任务 API", https://www.volcengine.com/docs/6448/2279230,
// whose parameters the vendor's own CLI, github.com/volcengine/mediakit-cli
// skills/byted-mediakit-video/reference/enhance-video.md and enhance-video-fast.md, lists
// field by field) take video_url, resolution or resolution_limit, fps 15-120, bitrate_level,
// scene (standard only), bit_depth 8, 10 or 12 (professional only) and client_token. They
// have no average bitrate in kbps, no enhancement style and no 16-bit depth: a request that
// asks for those is refused at submission, never sent with the field dropped.
var mediakitBitDepths = []int{8, 10, 12}

// refuseMediaKit names what of an enhancement (standalone, or a production request's
// enhancement half) AI MediaKit cannot do.
func refuseMediaKit(req *contract.VideoRequest) (string, string) {
	var bitrate, bitDepth *int
	var style string
	switch {
	case req.Enhancement != nil:
		e := req.Enhancement
		bitrate, bitDepth, style = e.Bitrate, e.BitDepth, e.EnhanceStyle
	case req.Production != nil:
		p := req.Production
		bitrate, bitDepth, style = p.Bitrate, p.BitDepth, p.EnhanceStyle
	default:
		return "", ""
	}
	switch {
	case bitrate != nil:
		return "metadata.bitrate", "metadata.bitrate is not available for this model; use metadata.bitrate_level (low, medium or high)."
	case style != "":
		return "metadata.enhance_style", "metadata.enhance_style is not available for this model."
	case bitDepth != nil && !slices.Contains(mediakitBitDepths, *bitDepth):
		return "metadata.bit_depth", "metadata.bit_depth " + strconv.Itoa(*bitDepth) + " is not available for this model; use 8, 10 or 12."
	}
	return "", ""
}
