package catalog

import (
	"fmt"
	"slices"
	"strings"

	"mediagen/internal/contract"
)

// wanModel is what one Wan model of DashScope video synthesis makes, from the model tables of
// Alibaba Cloud Model Studio's text-to-video and image-to-video (first frame) API references
// (help.aliyun.com/zh/model-studio/developer-reference/text-to-video-api-reference and
// …/image-to-video-api-reference; docs/upstreams.md#dashscope): the resolution tiers, the
// durations among the kind's 5, 10 and 15 s, and whether it makes video from text (t2v) or
// from a first frame, which an image-to-video model requires.
type wanModel struct {
	resolutions []string
	seconds     []int
	frame       bool // an image-to-video model: one first frame, required
}

// wanModels are the Wan models by model-name prefix, the most specific first.
var wanModels = []struct {
	prefix string
	m      wanModel
}{
	{"wan2.6-t2v", wanModel{[]string{"480p", "720p", "1080p"}, []int{5, 10, 15}, false}},
	{"wan2.6-i2v", wanModel{[]string{"480p", "720p", "1080p"}, []int{5, 10, 15}, true}},
	{"wan2.5-t2v", wanModel{[]string{"480p", "720p", "1080p"}, []int{5, 10}, false}},
	{"wan2.5-i2v", wanModel{[]string{"480p", "720p", "1080p"}, []int{5, 10}, true}},
	{"wan2.2-t2v-plus", wanModel{[]string{"480p", "1080p"}, []int{5}, false}},
	{"wan2.2-i2v-plus", wanModel{[]string{"480p", "1080p"}, []int{5}, true}},
	{"wan2.2-i2v-flash", wanModel{[]string{"480p", "720p", "1080p"}, []int{5}, true}},
	{"wanx2.1-t2v-turbo", wanModel{[]string{"480p", "720p"}, []int{5}, false}},
	{"wanx2.1-t2v-plus", wanModel{[]string{"720p"}, []int{5}, false}},
	{"wanx2.1-i2v-turbo", wanModel{[]string{"480p", "720p"}, []int{5}, true}},
	{"wanx2.1-i2v-plus", wanModel{[]string{"720p"}, []int{5}, true}},
}

// wanModelOf is a model's capabilities; ok is false for a model the table does not know,
// which is held only to what every Wan model of the protocol takes (refuseDashScope).
func wanModelOf(model string) (wanModel, bool) {
	for _, w := range wanModels {
		if strings.HasPrefix(model, w.prefix) {
			return w.m, true
		}
	}
	return wanModel{}, false
}

// refuseWanModel names what of a request the alias's Wan model cannot make: a resolution
// tier or a duration it does not make, a first frame given to a text-to-video model, or none
// given to an image-to-video one. Without this the create would be refused by DashScope and
// the task fail refunded; with it the request is refused at submission, and a routed alias
// gives it only to accounts whose model can make it.
func refuseWanModel(model string, req *contract.VideoRequest, g genParams) (string, string) {
	w, ok := wanModelOf(model)
	if !ok {
		return "", ""
	}
	res := g.resolution
	if res == "" {
		res = "720p" // the contract's default, which the adapter sends
	}
	frame := slices.ContainsFunc(req.Content, func(it contract.ContentItem) bool { return it.Role == contract.RoleFirstFrame })
	switch {
	case !slices.Contains(w.resolutions, res):
		return "metadata.resolution", "metadata.resolution " + res + " is not available for this model; use " + orList(w.resolutions) + "."
	case g.duration != -1 && !slices.Contains(w.seconds, g.duration):
		secs := make([]string, len(w.seconds))
		for i, s := range w.seconds {
			secs[i] = fmt.Sprint(s)
		}
		return "metadata.duration", fmt.Sprintf("metadata.duration %d is not available for this model; use %s seconds.", g.duration, orList(secs))
	case w.frame && !frame:
		return "metadata.content", "This model makes video from a first frame: give one image_url with role first_frame."
	case !w.frame && frame:
		return "metadata.content", "This model makes video from text only: a first frame is not available for this model."
	}
	return "", ""
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
