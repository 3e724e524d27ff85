package sandbox

import (
	"context"
	"errors"
	"fmt"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels"
	mediaprobe "mediagen/internal/media/probe"
	"mediagen/internal/provider"
)

// ResolutionShortSide maps an enhancement resolution to its target short side.
var ResolutionShortSide = map[string]int{"1080p": 1080, "2k": 1440, "4k": 2160, "8k": 4320}

// SubmitEnhancement accepts an enhancement job. The markers of an enhancement come from
// the sandbox-only query parameter of the source URL (?sandbox=fail, fail:CODE, expire,
// slow:10s, transient:2); the parameter is removed before the source is fetched.
func (e *Engine) SubmitEnhancement(ctx context.Context, r provider.EnhanceRequest) (string, error) {
	return e.submit(ctx, kindEnhancement, r.IdempotencyKey, func(id string) (*jobSpec, error) {
		var m markers
		fetchURL, err := r.Source.URL, error(nil)
		if !e.cfg.NoMarkers {
			m, fetchURL, err = parseURLMarkers(r.Source.URL)
		}
		if err != nil {
			return nil, permanent(CodeInvalidParameter, "%v", err)
		}
		// A production task's enhancement half takes [sandbox:enhance=…] from its prompt.
		if pm, _, perr := parseTextMarkers(r.Prompt); !e.cfg.NoMarkers && perr == nil && pm.Enhance != "" {
			if err := m.applyList(pm.Enhance); err != nil {
				return nil, permanent(CodeInvalidParameter, "%v", err)
			}
		}
		if r.Source.URL == "" && r.Source.Path == "" {
			return nil, permanent(CodeInvalidParameter, "the source video is missing")
		}
		short, err := enhanceShortSide(r)
		if err != nil {
			return nil, err
		}
		es := enhanceSpec(r, short)
		if r.FPS != nil && (*r.FPS < 1 || *r.FPS > ffmpeg.MaxRenderFPS) {
			return nil, permanent(CodeInvalidParameter, "fps %d is outside 1..%d", *r.FPS, ffmpeg.MaxRenderFPS)
		}
		if r.Bitrate != nil && (*r.Bitrate < 1 || *r.Bitrate > ffmpeg.MaxBitrateKbps) {
			return nil, permanent(CodeInvalidParameter, "bitrate %d kbit/s is outside 1..%d", *r.Bitrate, ffmpeg.MaxBitrateKbps)
		}
		switch es.BitrateLevel {
		case "", "low", "medium", "high":
		default:
			return nil, permanent(CodeInvalidParameter, "bitrate level %q is not low, medium or high", r.BitrateLevel)
		}
		if r.BitDepth != nil {
			switch *r.BitDepth {
			case 8, 10, 12, 16:
			default:
				return nil, permanent(CodeInvalidParameter, "bit depth %d is not 8, 10, 12 or 16", *r.BitDepth)
			}
		}
		return &jobSpec{
			Markers:   m,
			Outcome:   m.outcome(CodeGenerationFailed, ""),
			Enhance:   &r,
			SourceURL: fetchURL,
			ShortSide: short,
		}, nil
	})
}

// PollEnhancement reports an enhancement job; see the package documentation for the states.
func (e *Engine) PollEnhancement(ctx context.Context, jobID string) (provider.Job, error) {
	return e.poll(kindEnhancement, jobID)
}

// enhanceShortSide is the target short side: the named resolution's, or ShortSide
// (resolution_limit). Exactly one must be given.
func enhanceShortSide(r provider.EnhanceRequest) (int, error) {
	switch {
	case r.Resolution != "" && r.ShortSide != 0:
		return 0, permanent(CodeInvalidParameter, "resolution and a short-side limit are mutually exclusive")
	case r.Resolution != "":
		s, ok := ResolutionShortSide[r.Resolution]
		if !ok {
			return 0, permanent(CodeInvalidParameter, "resolution %q is not 1080p, 2k, 4k or 8k", r.Resolution)
		}
		return s, nil
	case r.ShortSide < ffmpeg.MinRenderSide || r.ShortSide > ffmpeg.MaxShortSide:
		return 0, permanent(CodeInvalidParameter, "a resolution or a short-side limit within %d..%d is required",
			ffmpeg.MinRenderSide, ffmpeg.MaxShortSide)
	}
	return r.ShortSide, nil
}

func enhanceSpec(r provider.EnhanceRequest, short int) ffmpeg.EnhanceSpec {
	es := ffmpeg.EnhanceSpec{ShortSide: short, BitrateLevel: r.BitrateLevel, MaxSeconds: r.MaxSourceSeconds}
	if r.FPS != nil {
		es.FPS = *r.FPS
	}
	if r.Bitrate != nil {
		es.BitrateKbps = *r.Bitrate
	}
	if r.BitDepth != nil {
		es.BitDepth = *r.BitDepth
	}
	return es
}

// renderEnhancement fetches (or reads) the source and re-encodes it.
func (e *Engine) renderEnhancement(ctx context.Context, spec *jobSpec) (result, error) {
	const name = "out.mp4"
	out := e.jobFile(spec.ID, name)
	if !fileExists(out) {
		src, err := e.obtain(ctx, spec.ID, "source", provider.Source{URL: spec.SourceURL, Path: spec.Enhance.Source.Path, Key: spec.Enhance.Source.Key},
			fetchOpts{allowHTTP: true, maxBytes: e.cfg.MaxFetchBytes, what: "source video"})
		if err != nil {
			return result{}, err
		}
		srcInfo, err := e.measureSource(ctx, src, spec.Enhance.MaxSourceSeconds)
		if err != nil {
			return result{}, err
		}
		e.renders.Add(1)
		es := enhanceSpec(*spec.Enhance, spec.ShortSide)
		es.Source = &srcInfo // measured just now: Enhance does not start ffprobe on it again
		if err := e.cfg.Tools.Enhance(ctx, src, out, es); err != nil {
			return result{}, enhanceError(err)
		}
	}
	info, err := e.describe(ctx, out)
	if err != nil {
		return result{}, failJob("The video could not be enhanced.", err)
	}
	return result{
		File:        name,
		ContentType: "video/mp4",
		Width:       info.Width,
		Height:      info.Height,
		FPS:         info.FPS,
		Duration:    info.Duration,
	}, nil
}

// measureSource measures the source with ffprobe and refuses one longer than the task was
// priced for (maxSeconds > 0): the URL served something else after submission (or was made
// to).
func (e *Engine) measureSource(ctx context.Context, src string, maxSeconds float64) (ffmpeg.Info, error) {
	info, err := e.cfg.Tools.Probe(ctx, src)
	if err != nil {
		return ffmpeg.Info{}, failJob("The source is not a readable video.", err)
	}
	// The source was measured at submission, but its URL may serve something else now: a
	// frame over the budget fails here, before the encoder decodes it (whose -max_pixels is
	// the wall behind this check, for a bitstream larger than its headers).
	// ffprobe, bounded by -max_pixels itself, may report no size for such a frame; the MP4
	// box probe reads the size the headers state.
	res, perr := mediaprobe.ProbeFile(ctx, src, mediaprobe.Options{})
	err = pixels.CheckVideoFrame(info.Width, info.Height)
	if errors.Is(perr, pixels.ErrOverBudget) {
		err = perr
	}
	if err != nil {
		return ffmpeg.Info{}, &jobError{code: CodeInvalidParameter, cause: err, message: "The source video cannot be used: " + mediaprobe.PublicMessage(err)}
	}
	if maxSeconds <= 0 {
		return info, nil
	}
	// The longest stream counts too, and so do the samples as the submission's probe reads
	// them: rewritten mvhd, tkhd and mdhd headers make ffprobe report less than the streams
	// hold, while the submission measured (and priced) the samples. A file the probe cannot
	// read leaves ffprobe's answer, and the output's own bound (Enhance measures its output
	// against MaxSeconds) still holds.
	length := info.Length()
	if perr == nil {
		length = max(length, res.Duration)
	}
	if length > maxSeconds {
		return ffmpeg.Info{}, sourceChanged(length, maxSeconds)
	}
	return info, nil
}

func sourceChanged(length, maxSeconds float64) error {
	return &jobError{code: CodeSourceChanged, message: fmt.Sprintf(
		"The source video measures %.3f s now, longer than the %.3f s it measured when the task was accepted; a source must not change after submission. Nothing was charged.",
		length, maxSeconds)}
}

func enhanceError(err error) error {
	var te *ffmpeg.ToolError
	switch {
	case errors.Is(err, ffmpeg.ErrOverLength):
		// The source decodes longer than any measure of it said: what it plays is not what
		// was priced, as with a source swapped after submission.
		return &jobError{code: CodeSourceChanged, message: "The source video plays longer than it measured when the task was accepted; a source must not change after submission. Nothing was charged.", cause: err}
	case errors.Is(err, ffmpeg.ErrNoVideo):
		return failJob("The source has no video stream.", err)
	case errors.Is(err, ffmpeg.ErrUnsupportedBitDepth):
		return failJob("The requested bit depth is not supported.", err)
	case errors.As(err, &te) && te.Tool == "ffprobe":
		return failJob("The source is not a readable video.", err)
	}
	return failJob("The video could not be enhanced.", err)
}
