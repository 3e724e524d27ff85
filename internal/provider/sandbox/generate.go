package sandbox

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels"
	"mediagen/internal/provider"
)

// SubmitGeneration accepts a native generation job. The same IdempotencyKey returns the
// same job id and never starts a second render. Validation problems and malformed
// sandbox markers are permanent *provider.Error values with code InvalidParameter;
// [sandbox:transient=N] makes the first N calls fail with provider.ErrTransient.
func (e *Engine) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	return e.submit(ctx, kindGeneration, r.IdempotencyKey, func(id string) (*jobSpec, error) {
		var m markers
		prompt, err := r.Prompt, error(nil)
		if !e.cfg.NoMarkers {
			m, prompt, err = parseTextMarkers(r.Prompt)
		}
		if err != nil {
			return nil, permanent(CodeInvalidParameter, "%v", err)
		}
		if err := validSize(r.Width, r.Height); err != nil {
			return nil, err
		}
		duration := r.Duration
		switch {
		case duration == -1:
			duration = DefaultDuration
		case duration < 1 || duration > MaxDuration:
			return nil, permanent(CodeInvalidParameter, "duration %d is not -1 or 1..%d seconds", r.Duration, MaxDuration)
		}
		format := r.OutputFormat
		switch format {
		case "":
			format = "mp4"
		case "mp4", "mov":
		default:
			return nil, permanent(CodeInvalidParameter, "output format %q is not mp4 or mov", r.OutputFormat)
		}
		spec := &jobSpec{
			Markers:  m,
			Outcome:  m.outcome(CodeGenerationFailed, r.TaskType),
			Generate: &r,
			Caption:  caption(prompt, r),
			Format:   format,
			Duration: duration,
		}
		return spec, nil
	})
}

// PollGeneration reports a generation job; see the package documentation for the states.
func (e *Engine) PollGeneration(ctx context.Context, jobID string) (provider.Job, error) {
	return e.poll(kindGeneration, jobID)
}

func validSize(w, h int) error {
	for _, side := range []int{w, h} {
		if side < ffmpeg.MinRenderSide || side > ffmpeg.MaxRenderSide || side%2 != 0 {
			return permanent(CodeInvalidParameter, "size %dx%d: each side must be even and within %d..%d",
				w, h, ffmpeg.MinRenderSide, ffmpeg.MaxRenderSide)
		}
	}
	return nil
}

// caption is the text drawn on the frames: the prompt without markers, then a line
// noting the inputs the sandbox accepts but cannot show (reference videos and audio,
// numbered per kind like @Video1 and @Audio1) and a non-default task type.
func caption(prompt string, r provider.GenerateRequest) string {
	var notes []string
	if r.TaskType != "" && r.TaskType != "auto" {
		notes = append(notes, "task "+r.TaskType)
	}
	counts := map[string]int{}
	for _, in := range r.Inputs {
		kind := inputKind(in)
		counts[kind]++
		switch kind {
		case "video", "audio":
			notes = append(notes, "ref "+kind+" "+strconv.Itoa(counts[kind]))
		}
	}
	imageRefs := 0
	for _, in := range r.Inputs {
		if in.Role == "reference_image" {
			imageRefs++
		}
	}
	if imageRefs > ffmpeg.MaxRefImages {
		notes = append(notes, fmt.Sprintf("+%d ref images not shown", imageRefs-ffmpeg.MaxRefImages))
	}
	lines := []string{}
	if prompt != "" {
		lines = append(lines, prompt)
	}
	if len(notes) > 0 {
		lines = append(lines, strings.Join(notes, " · "))
	}
	if len(lines) == 0 {
		return "mediagen sandbox"
	}
	return strings.Join(lines, "\n")
}

// inputKind is image, video or audio, from the item's type (its role when the type is
// missing).
func inputKind(in provider.Input) string {
	switch in.Type {
	case "image_url":
		return "image"
	case "video_url":
		return "video"
	case "audio_url":
		return "audio"
	}
	switch in.Role {
	case "reference_video":
		return "video"
	case "reference_audio":
		return "audio"
	}
	return "image"
}

// renderGeneration makes the video of a generation job and describes it.
func (e *Engine) renderGeneration(ctx context.Context, spec *jobSpec) (result, error) {
	r := spec.Generate
	name := "out." + spec.Format
	out := e.jobFile(spec.ID, name)
	if !fileExists(out) {
		rs := ffmpeg.RenderSpec{
			Width:     r.Width,
			Height:    r.Height,
			FPS:       FPS,
			Duration:  float64(spec.Duration),
			Audio:     r.GenerateAudio != nil && *r.GenerateAudio,
			Container: spec.Format,
			Text:      spec.Caption,
		}
		if err := e.prepareInputs(ctx, spec.ID, r.Inputs, &rs); err != nil {
			return result{}, err
		}
		e.renders.Add(1)
		if err := e.cfg.Tools.Render(ctx, rs, out); err != nil {
			return result{}, failJob("The video could not be generated.", err)
		}
	}
	info, err := e.describe(ctx, out)
	if err != nil {
		return result{}, failJob("The video could not be generated.", err)
	}
	ct := "video/mp4"
	if spec.Format == "mov" {
		ct = "video/quicktime"
	}
	return result{
		File:             name,
		ContentType:      ct,
		CompletionTokens: Tokens(info.Width, info.Height, info.FPS, info.Duration),
		Width:            info.Width,
		Height:           info.Height,
		FPS:              info.FPS,
		Duration:         info.Duration,
	}, nil
}

// Tokens is the documented usage formula, applied to the probed output:
// round(width × height × fps × seconds / 1024).
func Tokens(width, height int, fps, seconds float64) int64 {
	return int64(math.Round(float64(width) * float64(height) * fps * seconds / TokenDivisor))
}

// prepareInputs makes the frame and reference images local files for the render and
// checks that reference videos and audio are reachable.
func (e *Engine) prepareInputs(ctx context.Context, id string, inputs []provider.Input, rs *ffmpeg.RenderSpec) error {
	image := fetchOpts{maxBytes: min(MaxImageBytes, e.cfg.MaxFetchBytes)}
	for i, in := range inputs {
		name := fmt.Sprintf("input-%02d", i)
		var err error
		switch {
		case in.Role == "first_frame" && rs.FirstFrame == "":
			image.what = "first frame image"
			rs.FirstFrame, err = e.obtainImage(ctx, id, name, in.Source, image)
		case in.Role == "last_frame" && rs.LastFrame == "":
			image.what = "last frame image"
			rs.LastFrame, err = e.obtainImage(ctx, id, name, in.Source, image)
		case in.Role == "reference_image" && len(rs.RefImages) < ffmpeg.MaxRefImages:
			image.what = "reference image"
			var p string
			if p, err = e.obtainImage(ctx, id, name, in.Source, image); err == nil {
				rs.RefImages = append(rs.RefImages, p)
			}
		case inputKind(in) == "video":
			err = e.check(ctx, in.Source, "reference video")
		case inputKind(in) == "audio":
			err = e.check(ctx, in.Source, "reference audio")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// obtainImage is obtain for an image the render decodes: its header is read first, and an
// image whose size cannot be read or is over the pixel budget fails the job before ffmpeg
// sees it. An image by URL is fetched only now (the service does not read it at submission),
// so this is where a decompression bomb stops: a 746 KB PNG that declares 16000×16000 pixels
// would make the render hold 768 MB.
func (e *Engine) obtainImage(ctx context.Context, id, name string, src provider.Source, o fetchOpts) (string, error) {
	path, err := e.obtain(ctx, id, name, src, o)
	if err != nil {
		return "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", failJob(fmt.Sprintf("The %s could not be read.", o.what), err)
	}
	defer f.Close()
	size, err := pixels.ReadSize(f)
	if err != nil {
		return "", &jobError{code: CodeInvalidParameter, cause: err,
			message: fmt.Sprintf("The %s could not be read: its size is not in a PNG, JPEG, WebP, GIF or BMP header.", o.what)}
	}
	if err := size.Check(); err != nil {
		return "", &jobError{code: CodeInvalidParameter, cause: err, message: fmt.Sprintf("The %s cannot be used: %v.", o.what, err)}
	}
	return path, nil
}
