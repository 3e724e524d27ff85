package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
)

// The sandbox cannot clone a voice, but it does not ignore a speech's references either: they
// choose the espeak-ng voice it speaks with, in a way a client can observe (docs/sandbox.md,
// "Speech references"):
//
//   - audio_url references: each is measured (ffmpeg.VoicePitch, the median fundamental of
//     its voiced frames); their mean F0 picks espeak-ng's pitch, PitchFor (60 Hz → 1,
//     163 Hz → 99, linear, clamped): espeak-ng's en voice at pitch p measures about
//     60 + 1.04·p Hz, so a reference spoken by espeak-ng at pitch p is answered at about p;
//     a low voice makes low speech and a high voice high speech.
//   - an image_url reference: its shape picks a voice variant, read from its header only:
//     taller than wide (a portrait) en+f3, otherwise en+m3.
const (
	maxRefAudioBytes = 100 << 20 // as the submission's check (speech.maxAudioRefBytes)
	maxRefImageBytes = 32 << 20
	lowF0, highF0    = 60.0, 163.0
)

// Voice variants an image reference picks.
const (
	VoicePortrait  = "en+f3"
	VoiceLandscape = "en+m3"
)

// PitchFor is the espeak-ng pitch (1..99) a reference voice of f0 Hz picks.
func PitchFor(f0 float64) int {
	p := int(math.Round((f0 - lowF0) * 99 / (highF0 - lowF0)))
	return min(max(p, 1), 99)
}

// referenceVoice is the espeak-ng options the request's references pick.
func (e *Engine) referenceVoice(ctx context.Context, r provider.SpeechRequest) (ffmpeg.SpeakOptions, error) {
	opt := ffmpeg.SpeakOptions{Format: "mp3"}
	if len(r.References) == 0 {
		return opt, nil
	}
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"speechref-*")
	if err != nil {
		return opt, err
	}
	defer os.RemoveAll(dir)
	var sum float64
	var voices int
	for i, ref := range r.References {
		path := filepath.Join(dir, fmt.Sprintf("ref%d", i))
		limit := int64(maxRefAudioBytes)
		if ref.Type == "image_url" {
			limit = maxRefImageBytes
		}
		if err := e.download(ctx, ref.Source, path, limit); err != nil {
			return opt, err
		}
		if ref.Type == "image_url" {
			voice, err := imageVoice(path)
			if err != nil {
				return opt, err
			}
			opt.Voice = voice
			continue
		}
		f0, err := e.cfg.Tools.VoicePitch(ctx, path)
		switch {
		case ctx.Err() != nil:
			return opt, fmt.Errorf("sandbox speech: %w", ctx.Err())
		case err != nil:
			e.log.Info("speech reference not measured", "reference", i, "err", err)
			return opt, permanent(CodeInvalidParameter, "reference audio %d has no voice the sandbox can measure", i+1)
		}
		sum += f0
		voices++
	}
	if voices > 0 {
		opt.Pitch = PitchFor(sum / float64(voices))
	}
	e.log.Info("speech references picked the voice", "mode", r.Mode, "references", len(r.References), "voice", opt.Voice, "pitch", opt.Pitch)
	return opt, nil
}

// download copies a reference into path through the fetch policy, at most limit bytes.
func (e *Engine) download(ctx context.Context, src provider.Source, path string, limit int64) error {
	if e.cfg.Fetch == nil {
		return permanent(CodeSpeechFailed, "speech references cannot be fetched here")
	}
	resp, err := e.cfg.Fetch.Get(ctx, src.URL, safefetch.RequestOptions{MaxBytes: limit, NoRedirects: true})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("sandbox speech: %w", ctx.Err())
		}
		return permanent(CodeInvalidParameter, "a speech reference could not be fetched: %s", safefetch.PublicMessage(err))
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, provider.Capped(resp.Body, limit))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("sandbox speech: %w", ctx.Err())
	case errors.Is(err, provider.ErrTooLarge):
		return permanent(CodeInvalidParameter, "a speech reference is larger than %d MB", limit>>20)
	case err != nil:
		return fmt.Errorf("sandbox speech: fetch a reference: %w: %w", err, provider.ErrTransient)
	}
	return nil
}

// imageVoice is the variant an image picks by its shape, from its header.
func imageVoice(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	size, err := pixels.ReadSize(f)
	if err != nil {
		return "", permanent(CodeInvalidParameter, "the image reference's size could not be read")
	}
	if size.Height > size.Width {
		return VoicePortrait, nil
	}
	return VoiceLandscape, nil
}
