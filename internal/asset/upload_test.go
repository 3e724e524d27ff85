package asset

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"mediagen/internal/media/pixels"
	"mediagen/internal/media/pixels/pixelstest"
)

func TestCheckImageAcceptsFirstFrameFormatsOnly(t *testing.T) {
	t.Parallel()
	png := pngBytes(t, 40, 30)
	info, err := CheckImage(bytes.NewReader(png))
	if err != nil || info.Format != "PNG" || info.Ext != "png" || info.Width != 40 || info.Height != 30 {
		t.Fatalf("PNG: %+v %v", info, err)
	}
	for name, b := range map[string][]byte{
		"text":          []byte("hello, not an image"),
		"truncated PNG": png[:20],
		"GIF":           []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"),
		"empty":         nil,
	} {
		if info, err := CheckImage(bytes.NewReader(b)); err == nil {
			t.Errorf("%s accepted: %+v", name, info)
		}
		if _, _, ok := ImageFormat(b); ok && name != "truncated PNG" {
			t.Errorf("%s: ImageFormat accepted it", name)
		}
	}
}

// An image over the pixel budget is refused from its header, whatever its bytes weigh: the
// 2 GB 16-bit RGBA canvas is refused from its first 33 bytes, and nothing decodes it.
func TestCheckImageRefusesOverThePixelBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		w, h  uint32
		depth byte
		ok    bool
	}{
		{4096, 4096, 8, true}, {16000, 16000, 16, false}, {4097, 4096, 8, false}, {65535, 1, 16, true},
		// 16-bit samples count twice: a 4K frame's worth passes, 4096×4096 does not.
		{2896, 2896, 16, true}, {4096, 4096, 16, false},
	} {
		_, err := CheckImage(bytes.NewReader(pixelstest.PNGHeader(c.w, c.h, c.depth, pixelstest.RGBA)))
		if c.ok != (err == nil) {
			t.Errorf("%dx%d: %v", c.w, c.h, err)
		}
		if err != nil && (!errors.Is(err, pixels.ErrOverBudget) || !strings.Contains(err.Error(), "16,777,216 pixels")) {
			t.Errorf("%dx%d: %v, want the budget named", c.w, c.h, err)
		}
	}
}
