package pixels

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"io"
	"strings"
	"testing"

	"mediagen/internal/media/pixels/pixelstest"
)

func jpegWithSegments(t *testing.T, w, h, appBytes int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	// APP1 segments after SOI, as cameras write EXIF: the frame header comes after them.
	out := append([]byte{}, b.Bytes()[:2]...)
	for appBytes > 0 {
		n := min(appBytes, 65533)
		seg := []byte{0xff, 0xe1, 0, 0}
		binary.BigEndian.PutUint16(seg[2:], uint16(n+2))
		out = append(append(out, seg...), make([]byte, n)...)
		appBytes -= n
	}
	return append(out, b.Bytes()[2:]...)
}

func gifOf(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func bmpHeader(w, h int32) []byte {
	b := make([]byte, 54)
	copy(b, "BM")
	binary.LittleEndian.PutUint32(b[14:], 40)
	binary.LittleEndian.PutUint32(b[18:], uint32(w))
	binary.LittleEndian.PutUint32(b[22:], uint32(h))
	return b
}

func webpVP8X(w, h int) []byte {
	b := make([]byte, 30)
	copy(b, "RIFF")
	copy(b[8:], "WEBPVP8X")
	w, h = w-1, h-1
	b[24], b[25], b[26] = byte(w), byte(w>>8), byte(w>>16)
	b[27], b[28], b[29] = byte(h), byte(h>>8), byte(h>>16)
	return b
}

func TestReadSizeFindsTheHeaderSize(t *testing.T) {
	for _, c := range []struct {
		name   string
		data   []byte
		format string
		w, h   int
	}{
		{"png bomb header only", pixelstest.PNGHeader(16000, 16000, 16, pixelstest.RGBA), "PNG", 16000, 16000},
		{"jpeg", jpegWithSegments(t, 33, 17, 0), "JPEG", 33, 17},
		{"jpeg after 200 KiB of metadata", jpegWithSegments(t, 40, 30, 200<<10), "JPEG", 40, 30},
		{"webp vp8x", webpVP8X(20000, 9000), "WebP", 20000, 9000},
		{"gif", gifOf(t, 12, 7), "GIF", 12, 7},
		{"bmp top-down", bmpHeader(5000, -4000), "BMP", 5000, 4000},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ReadSize(bytes.NewReader(c.data))
			if err != nil || s.Format != c.format || s.Width != c.w || s.Height != c.h || (c.format == "PNG") != s.Deep() {
				t.Fatalf("ReadSize = %+v, %v; want %s %dx%d", s, err, c.format, c.w, c.h)
			}
		})
	}
}

// countingReader counts what was read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReadSizeReadsNoPixelDataAndStopsAtItsBound(t *testing.T) {
	var bomb bytes.Buffer
	if err := pixelstest.WritePNG(&bomb, 16000, 16000, 8, pixelstest.RGB); err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{r: bytes.NewReader(bomb.Bytes())}
	if _, err := ReadSize(cr); err != nil {
		t.Fatal(err)
	}
	if cr.n > 512 {
		t.Fatalf("read %d bytes of a PNG; its size is in the first 24", cr.n)
	}
	// A JPEG whose frame header never comes: reading stops at HeaderReadMax.
	endless := io.MultiReader(bytes.NewReader(jpegWithSegments(t, 8, 8, 2*HeaderReadMax)[:2*HeaderReadMax]), strings.NewReader(""))
	cr = &countingReader{r: endless}
	if _, err := ReadSize(cr); !errors.Is(err, ErrNoSize) || cr.n > HeaderReadMax {
		t.Fatalf("ReadSize = %v after %d bytes; want ErrNoSize within %d", err, cr.n, HeaderReadMax)
	}
}

func TestReadSizeRefusesWhatItCannotMeasure(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":            nil,
		"text":             []byte("hello, world: not an image at all, not even close"),
		"tiff":             []byte("II*\x00\x08\x00\x00\x00................................"),
		"png without ihdr": append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIDAT"), make([]byte, 20)...),
		"png zero width":   pixelstest.PNGHeader(0, 10, 8, pixelstest.RGB),
		"jpeg scan first":  {0xff, 0xd8, 0xff, 0xda, 0, 2},
		"jpeg truncated":   {0xff, 0xd8, 0xff, 0xe1, 0x10},
	} {
		if s, err := ReadSize(bytes.NewReader(data)); !errors.Is(err, ErrNoSize) {
			t.Errorf("%s: ReadSize = %+v, %v; want ErrNoSize", name, s, err)
		}
	}
}

func TestCheckImageRefusesOverTheBudgetAndSaysBoth(t *testing.T) {
	if err := CheckImage(4096, 4096); err != nil {
		t.Fatalf("at the budget: %v", err)
	}
	if err := CheckImage(3840, 2160); err != nil {
		t.Fatalf("4K: %v", err)
	}
	err := CheckImage(16000, 16000)
	if !errors.Is(err, ErrOverBudget) {
		t.Fatalf("16000x16000: %v", err)
	}
	want := "the image is 16000×16000 pixels (256,000,000), over the limit of 16,777,216 pixels (16.8 megapixels, for example 4096×4096)"
	if err.Error() != want {
		t.Fatalf("message %q\nwant    %q", err, want)
	}
	if err := CheckImage(4097, 4096); !errors.Is(err, ErrOverBudget) {
		t.Fatalf("one column over: %v", err)
	}
	deep := Size{Format: "PNG", Width: 4096, Height: 4096, BitDepth: 16}
	if err := deep.Check(); !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "count twice (33,554,432)") {
		t.Fatalf("16-bit 4096x4096: %v", err)
	}
	if err := (Size{Width: 2896, Height: 2896, BitDepth: 16}).Check(); err != nil {
		t.Fatalf("16-bit 2896x2896: %v", err)
	}
	if err := (Size{Width: 4096, Height: 4096, BitDepth: 8}).Check(); err != nil {
		t.Fatalf("8-bit 4096x4096: %v", err)
	}
	if err := CheckVideoFrame(8192, 4320); err != nil {
		t.Fatalf("DCI 8K frame: %v", err)
	}
	if err := CheckVideoFrame(8192, 4322); !errors.Is(err, ErrOverBudget) || !strings.Contains(err.Error(), "35,389,440 pixels") {
		t.Fatalf("over 8K: %v", err)
	}
}
