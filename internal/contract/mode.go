package contract

import (
	"slices"
	"strconv"

	"mediagen/internal/apierr"
)

// Omni task types (metadata.omni_reference_task_type).
const (
	TaskAuto      = "auto"
	TaskReference = "reference"
	TaskEdit      = "edit"
	TaskExtend    = "extend"
)

var (
	taskTypes = []string{TaskAuto, TaskReference, TaskEdit, TaskExtend}
	// allRatios are allowed in text and reference modes; every other mode takes adaptive only.
	allRatios = []string{"adaptive", "16:9", "4:3", "1:1", "3:4", "9:16", "21:9"}
)

const (
	minDuration = 4
	maxDuration = 30 // 2.5 and production
	maxShort    = 15 // Mini, and the choice for Standard/Fast 2.0
)

// deriveMode decides the generation mode from the items and the task type. Frame control and
// multimodal reference are separate modes, so an item set mixing the two is rejected rather
// than guessed at; an explicit task type must be backed by the inputs it needs.
func deriveMode(items []ContentItem, task, contentParam, taskParam string) (Mode, *apierr.Error) {
	first, last, refs, videos := -1, -1, 0, 0
	for i, it := range items {
		switch it.Role {
		case RoleFirstFrame:
			first = i
		case RoleLastFrame:
			last = i
		case RoleReferenceVideo:
			videos++
			refs++
		default:
			refs++
		}
	}
	frames := first >= 0 || last >= 0
	if frames && refs > 0 {
		// Blame the first item whose kind differs from the first item's.
		i := 0
		for i < len(items) && isFrame(items[i]) == isFrame(items[0]) {
			i++
		}
		return "", invalidf(joinIndex(contentParam, i)+".role", "first_frame and last_frame items cannot be combined with reference items in one request.")
	}
	if last >= 0 && first < 0 {
		return "", invalidf(joinIndex(contentParam, last)+".role", "A last_frame item needs a first_frame item in the same request.")
	}
	switch task {
	case TaskReference:
		if refs == 0 {
			return "", invalidf(taskParam, "%s reference needs at least one reference_image, reference_video or reference_audio item in %s.", taskParam, contentParam)
		}
		return ModeReference, nil
	case TaskEdit, TaskExtend:
		if videos == 0 {
			return "", invalidf(taskParam, "%s %s needs a reference_video item in %s.", taskParam, task, contentParam)
		}
		if task == TaskEdit {
			return ModeEdit, nil
		}
		return ModeExtend, nil
	}
	switch {
	case first >= 0 && last >= 0:
		return ModeFirstLastFrame, nil
	case first >= 0:
		return ModeFirstFrame, nil
	case refs > 0:
		return ModeReference, nil
	}
	return ModeText, nil
}

// checkRatio applies the per-mode ratio rule after the value itself has been validated.
func checkRatio(ratio string, mode Mode, param string) *apierr.Error {
	if mode == ModeText || mode == ModeReference || ratio == "adaptive" {
		return nil
	}
	return invalidf(param, "%s must be omitted or adaptive in %s mode.", param, mode)
}

// durationRange is the accepted duration set: -1 (when allowed) or lo..hi.
type durationRange struct {
	minusOne bool
	lo, hi   int64
}

func (r durationRange) String() string {
	if r.minusOne {
		return "-1 or an integer from " + itoa(r.lo) + " to " + itoa(r.hi)
	}
	return "an integer from " + itoa(r.lo) + " to " + itoa(r.hi)
}

// readDuration reads metadata.duration: -1 when omitted; in edit mode only -1 is accepted.
func readDuration(meta object, r durationRange, mode Mode) (int, *apierr.Error) {
	n, ok, err := meta.integer("duration")
	if err != nil {
		return 0, err
	}
	if !ok {
		return -1, nil
	}
	param := meta.param("duration")
	if !(r.minusOne && n == -1) && (n < r.lo || n > r.hi) {
		return 0, invalidf(param, "%s must be %s.", param, r)
	}
	if mode == ModeEdit && n != -1 {
		return 0, invalidf(param, "%s must be omitted or -1 in edit mode.", param)
	}
	return int(n), nil
}

// readTaskType reads omni_reference_task_type, "auto" when omitted.
func readTaskType(meta object) (string, *apierr.Error) {
	t, ok, err := meta.enum("omni_reference_task_type", taskTypes...)
	if err != nil || !ok {
		return TaskAuto, err
	}
	return t, nil
}

// readRatio reads metadata.ratio, "adaptive" when omitted, and applies the mode rule.
func readRatio(meta object, mode Mode) (string, *apierr.Error) {
	r, ok, err := meta.enum("ratio", allRatios...)
	if err != nil {
		return "", err
	}
	if !ok {
		return "adaptive", nil
	}
	return r, checkRatio(r, mode, meta.param("ratio"))
}

// requirePrompt: a request without content is text-to-video and needs something to generate.
func requirePrompt(req *VideoRequest, mode Mode) *apierr.Error {
	if mode == ModeText && !hasText(req.Prompt) {
		return invalidf("prompt", "prompt is required when metadata.content has no items.")
	}
	return nil
}

func isFrame(it ContentItem) bool { return it.Role == RoleFirstFrame || it.Role == RoleLastFrame }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func hasText(s string) bool {
	return slices.ContainsFunc([]byte(s), func(c byte) bool { return c != ' ' && c != '\t' && c != '\n' && c != '\r' })
}
