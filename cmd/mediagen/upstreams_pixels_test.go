package main

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels/pixelstest"
	"mediagen/internal/provider"
)

// The openai kind's first-frame fitter reads the image's header before ffprobe or the fit
// decode it: an image over the pixel budget (or of no readable size) is refused for good,
// with the budget named; an image within it is fitted.
func TestFrameFitterRefusesImagesOverThePixelBudgetBeforeDecoding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A stand-in ffprobe that fails the test if it runs: nothing may decode a refused image.
	f := frameFitter{tools: ffmpeg.Tools{FFprobe: write("ffprobe", []byte("#!/bin/sh\necho ran >> "+filepath.Join(dir, "ran")+"\nexit 1\n")),
		FFmpeg: "/nonexistent/ffmpeg"}}
	_ = os.Chmod(f.tools.FFprobe, 0o700)
	for name, b := range map[string][]byte{
		"bomb16.png": pixelstest.PNGHeader(16000, 16000, 16, pixelstest.RGBA),
		"notes.txt":  []byte("not an image"),
	} {
		_, _, _, err := f.Fit(t.Context(), provider.Source{Path: write(name, b)})
		var pe *provider.Error
		if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) {
			t.Fatalf("%s: %v, want a permanent refusal", name, err)
		}
		if name == "bomb16.png" && !strings.Contains(pe.Message, "16,777,216 pixels") {
			t.Errorf("%s: message %q does not state the budget", name, pe.Message)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("ffprobe ran on a refused image")
	}
	var small bytes.Buffer
	_ = png.Encode(&small, image.NewGray(image.Rect(0, 0, 64, 48)))
	if _, _, _, err := (frameFitter{}).Fit(t.Context(), provider.Source{Path: write("small.png", small.Bytes())}); err != nil {
		t.Fatalf("an image within the budget: %v", err)
	}
}
