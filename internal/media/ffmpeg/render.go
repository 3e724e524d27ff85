package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Render limits. Dimensions must be even because 4:2:0 chroma halves them.
const (
	MinRenderSide     = 16
	MaxRenderSide     = 8192
	MaxRenderFPS      = 120
	MaxRenderDuration = 600.0 // seconds
	// MaxRefImages is how many reference images the strip shows; later ones
	// are ignored rather than failing a sandbox render over decoration.
	MaxRefImages = 4
)

// ErrInvalidSpec is wrapped by every validation error of a spec or option.
var ErrInvalidSpec = errors.New("invalid spec")

// RenderSpec describes a synthetic clip made by Render.
type RenderSpec struct {
	Width, Height int     // even, MinRenderSide..MaxRenderSide
	FPS           int     // 1..MaxRenderFPS
	Duration      float64 // seconds, exact; (0, MaxRenderDuration]
	Audio         bool    // add an AAC tone track; otherwise no audio stream
	Container     string  // "mp4" (default when empty) or "mov"

	// Text is drawn as a caption over every frame, wrapped to at most three
	// lines and cut with "…" beyond that. It is passed to ffmpeg in a file
	// and drawn without %{…} expansion, so any characters are safe.
	Text string

	// FirstFrame and LastFrame are optional image files (anything ffmpeg
	// decodes, detected by content) shown full-frame, scaled to fit and
	// padded black, during the first and the last second (or half the clip
	// when it is shorter than two seconds).
	FirstFrame, LastFrame string
	// RefImages are optional images shown as thumbnails along the top left.
	RefImages []string
}

func (s RenderSpec) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("render: %w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	for _, side := range []int{s.Width, s.Height} {
		if side < MinRenderSide || side > MaxRenderSide || side%2 != 0 {
			return bad("size %dx%d: each side must be even and within %d..%d", s.Width, s.Height, MinRenderSide, MaxRenderSide)
		}
	}
	if s.FPS < 1 || s.FPS > MaxRenderFPS {
		return bad("fps %d outside 1..%d", s.FPS, MaxRenderFPS)
	}
	if !(s.Duration > 0 && s.Duration <= MaxRenderDuration) {
		return bad("duration %v outside (0, %v]", s.Duration, MaxRenderDuration)
	}
	if s.Container != "" && s.Container != "mp4" && s.Container != "mov" {
		return bad("container %q is neither mp4 nor mov", s.Container)
	}
	for _, img := range append([]string{s.FirstFrame, s.LastFrame}, s.refs()...) {
		if img == "" {
			continue
		}
		if _, err := os.Stat(img); err != nil {
			return fmt.Errorf("render: image: %w", err)
		}
	}
	return nil
}

func (s RenderSpec) refs() []string {
	return s.RefImages[:min(len(s.RefImages), MaxRefImages)]
}

func (s RenderSpec) container() string { return orDefault(s.Container, "mp4") }

// Render writes the clip described by spec to out atomically.
func (t Tools) Render(ctx context.Context, spec RenderSpec, out string) error {
	if err := spec.validate(); err != nil {
		return err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()

	textFile, cleanup, err := t.writeCaption(spec)
	if err != nil {
		return err
	}
	defer cleanup()

	return writeAtomic(out, func(tmp string) error {
		args := t.renderArgs(spec, textFile, tmp)
		if err := run(ctx, proc{mem: t.encodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: args}); err != nil {
			return fmt.Errorf("render: %w", err)
		}
		return nil
	})
}

// writeCaption stores the prepared caption in a private temporary file for
// drawtext's textfile option; passing the text inline would need escaping
// that is easy to get wrong. It returns "" when there is nothing to draw.
func (t Tools) writeCaption(spec RenderSpec) (path string, cleanup func(), err error) {
	size := fontSize(spec.Width, spec.Height)
	text := prepareText(spec.Text, captionColumns(spec.Width, size), maxTextLines)
	if text == "" {
		return "", func() {}, nil
	}
	if _, err := os.Stat(t.fontFile()); err != nil {
		return "", nil, fmt.Errorf("render: font file: %w", err)
	}
	dir, err := os.MkdirTemp("", ScratchPrefix+"caption-*")
	if err != nil {
		return "", nil, fmt.Errorf("render: caption: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "caption.txt")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("render: caption: %w", err)
	}
	return path, cleanup, nil
}
