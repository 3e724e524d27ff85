package pixelstest

import (
	"bytes"
	"image/png"
	"testing"
)

// A small bomb decodes with Go's own decoder: the stream is valid PNG, checksums included.
func TestWritePNGDecodes(t *testing.T) {
	for _, c := range []struct {
		w, h      uint32
		depth, ct byte
	}{{100, 70, 8, RGB}, {33, 5, 16, RGBA}, {4000, 4000, 8, Gray}, {8000, 3000, 8, Gray}} {
		var b bytes.Buffer
		if err := WritePNG(&b, c.w, c.h, c.depth, c.ct); err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%dx%d: %v", c.w, c.h, err)
		}
		if r := img.Bounds(); r.Dx() != int(c.w) || r.Dy() != int(c.h) {
			t.Fatalf("decoded %v, want %dx%d", r, c.w, c.h)
		}
	}
}
