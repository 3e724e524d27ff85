package video

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/probe"
)

// measuredResult is a stored result and its length.
type measuredResult struct {
	info   ffmpeg.Info
	length float64 // seconds: the longer of ffprobe's container and streams, and the samples
}

// measure reads a stored result's length as it plays: ffprobe's container duration, or its
// longest stream's or (for an MP4/MOV) its samples' when they run past the container's by
// more than its rounding (ffmpeg.HeaderRounding). ffprobe reads headers, which a hostile
// upstream can rewrite to be measured, cut and billed shorter than its result plays; an
// honest file is billed its container's duration, as before.
func (p *Pipeline) measure(ctx context.Context, path string) (measuredResult, error) {
	if p.Tracer != nil {
		return p.tracedMeasure(ctx, path)
	}
	return p.measureFile(ctx, path)
}

func (p *Pipeline) measureFile(ctx context.Context, path string) (measuredResult, error) {
	info, err := p.Tools.Probe(ctx, path)
	if err != nil {
		return measuredResult{}, err
	}
	m := measuredResult{info: info, length: info.Billable()}
	if samples, err := sampleLength(ctx, path); err == nil && samples > m.length+ffmpeg.HeaderRounding {
		m.length = samples
	}
	return m, nil
}

func sampleLength(ctx context.Context, path string) (float64, error) {
	res, err := probe.ProbeFile(ctx, path, probe.Options{})
	return res.Duration, err
}

func (m measuredResult) delivered(reported int64) billing.Delivered {
	return billing.Delivered{Micros: billing.SecondsToMicros(m.length), FPS: m.info.FPS, Width: m.info.Width, Height: m.info.Height, ReportedTokens: reported}
}

// errUnusable is an upstream result that cannot be measured or cut to the request: the
// task fails as an upstream fault, refunded in full.
var errUnusable = errors.New("upstream result unusable")

// bounded holds a stored result within the request: the object at key, read from path, is
// measured, and when it runs past the request's bound (billing.Quote.LengthBound) it is cut
// to it (ffmpeg.Tools.Trim), stored again under key, and measured again. The cut is the
// upstream's excess, priced by what the whole result would have charged. It returns the
// result as stored, the path of that file (path, or a cut copy that release removes), and
// the excess (nil when nothing was cut). A result that cannot be measured or cut is
// errUnusable.
func (s *stepCtx) bounded(ctx context.Context, key, path, upstream string) (measuredResult, string, *billing.Excess, func(), error) {
	release := func() {}
	m, err := s.p.measure(ctx, path)
	if err != nil {
		if ctx.Err() != nil {
			return measuredResult{}, "", nil, release, err
		}
		return measuredResult{}, "", nil, release, fmt.Errorf("%w: measure: %w", errUnusable, err)
	}
	bound := float64(s.quote.LengthBound()) / 1e6
	if bound <= 0 || m.length <= bound {
		return m, path, nil, release, nil
	}
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"trim-*") // swept at start if a crash leaves it
	if err != nil {
		return measuredResult{}, "", nil, release, err
	}
	release = func() { os.RemoveAll(dir) }
	cut := filepath.Join(dir, "cut"+filepath.Ext(key))
	if err := s.p.Tools.Trim(ctx, path, cut, bound); err != nil {
		release()
		if ctx.Err() != nil {
			return measuredResult{}, "", nil, func() {}, err
		}
		return measuredResult{}, "", nil, func() {}, fmt.Errorf("%w: cut %.3f s to %.3f s: %w", errUnusable, m.length, bound, err)
	}
	f, err := os.Open(cut)
	if err != nil {
		release()
		return measuredResult{}, "", nil, func() {}, err
	}
	_, err = s.p.Blobs.Put(ctx, key, f)
	f.Close()
	if err != nil {
		release()
		return measuredResult{}, "", nil, func() {}, fmt.Errorf("store the cut result: %w", err)
	}
	kept, err := s.p.measure(ctx, cut)
	if err != nil {
		release()
		return measuredResult{}, "", nil, func() {}, fmt.Errorf("%w: measure the cut: %w", errUnusable, err)
	}
	whole, err := billing.Claim(s.quote, m.delivered(0))
	if err != nil {
		release()
		return measuredResult{}, "", nil, func() {}, err
	}
	part, err := billing.Claim(s.quote, kept.delivered(0))
	if err != nil {
		release()
		return measuredResult{}, "", nil, func() {}, err
	}
	ex := &billing.Excess{Kind: billing.ExcessDuration, Upstream: upstream, Claimed: whole, Amount: max(whole-part, 0),
		Detail: fmt.Sprintf("result %.3f s, cut to %.3f s (the request allows %.3f s)", m.length, kept.length, bound)}
	s.log.Warn("upstream result longer than the request; cut to the request's bound", "task_id", s.c.ID, "upstream", upstream,
		"measured_s", m.length, "kept_s", kept.length, "bound_s", bound)
	return kept, cut, ex, release, nil
}

// unusable fails a task whose upstream result cannot be measured or cut: an upstream fault,
// refunded in full.
func (s *stepCtx) unusable(err error) (Outcome, string, error) {
	s.upstreamErr("poll", "result_unusable")
	s.log.Error("the upstream's result cannot be measured or cut to the request; failing the task", "task_id", s.c.ID,
		"upstream", s.account(), "err", err)
	return permanent("video_generation_failed", "The video could not be generated.").because("result unusable: " + err.Error()), "", nil
}

// blobFile is blob.LocalFile, named for the steps.
func (s *stepCtx) blobFile(ctx context.Context, key string) (string, func(), error) {
	return blob.LocalFile(ctx, s.p.Blobs, key)
}
