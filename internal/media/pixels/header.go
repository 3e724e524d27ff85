package pixels

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// HeaderReadMax bounds what ReadSize reads of a file: the size of a PNG, WebP, GIF or BMP
// sits in its first 30 bytes; a JPEG's follows its metadata segments (EXIF with its
// thumbnail is at most 64 KiB, an ICC profile a few hundred KiB at most in practice).
const HeaderReadMax = 1 << 20

// ErrNoSize means the image's size could not be read from its header: not a format ReadSize
// knows (PNG, JPEG, WebP, GIF, BMP), a damaged header, or a JPEG whose frame header does not
// come within HeaderReadMax bytes.
var ErrNoSize = errors.New("pixels: image size not found in its header")

// Size is what an image's header says.
type Size struct {
	Format        string // PNG, JPEG, WebP, GIF or BMP
	Width, Height int
	// BitDepth is the bits per sample the file stores: 16 for a 16-bit PNG, 12 for a
	// 12-bit JPEG, 8 (or fewer) otherwise. A decoder holds a sample of more than 8 bits in
	// 16, so such an image costs twice its pixels.
	BitDepth int
}

// Pixels is Width × Height.
func (s Size) Pixels() int64 { return int64(s.Width) * int64(s.Height) }

// Deep reports samples of more than 8 bits, which a decoder holds in 16.
func (s Size) Deep() bool { return s.BitDepth > 8 }

// Check refuses an image over the image budget: its pixels, counted twice when Deep. The
// budget is what decoding costs, and a 16-bit sample costs what two 8-bit ones do: a
// 4096×4096 16-bit RGBA PNG decodes into 128 MiB, twice its 8-bit twin.
func (s Size) Check() error {
	cost := s.Pixels()
	if s.Deep() {
		cost *= 2
	}
	if cost > MaxImagePixels {
		return &OverBudgetError{What: "image", Width: s.Width, Height: s.Height, Budget: MaxImagePixels, Deep: s.Deep()}
	}
	return nil
}

// ReadSize reads an image's format and size from its header, reading at most HeaderReadMax
// bytes of r and never any pixel data.
func ReadSize(r io.Reader) (Size, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, HeaderReadMax), 512)
	head, _ := br.Peek(30)
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		// The first chunk is IHDR: width and height, 4 bytes each, big-endian.
		if len(head) < 24 || string(head[12:16]) != "IHDR" {
			return Size{}, fmt.Errorf("%w: PNG without IHDR", ErrNoSize)
		}
		s, err := sized("PNG", int64(binary.BigEndian.Uint32(head[16:])), int64(binary.BigEndian.Uint32(head[20:])))
		if len(head) > 24 {
			s.BitDepth = int(head[24])
		}
		return s, err
	case bytes.HasPrefix(head, []byte("\xff\xd8")):
		return jpegSize(br)
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		w, h, ok := WebPSize(head)
		if !ok {
			return Size{}, fmt.Errorf("%w: WebP header", ErrNoSize)
		}
		return sized("WebP", int64(w), int64(h))
	case bytes.HasPrefix(head, []byte("GIF87a")) || bytes.HasPrefix(head, []byte("GIF89a")):
		// The logical screen; a frame may not exceed it (decoders refuse or clip one that does).
		if len(head) < 10 {
			return Size{}, fmt.Errorf("%w: GIF header", ErrNoSize)
		}
		return sized("GIF", int64(binary.LittleEndian.Uint16(head[6:])), int64(binary.LittleEndian.Uint16(head[8:])))
	case bytes.HasPrefix(head, []byte("BM")):
		// BITMAPINFOHEADER and later: signed 32-bit width and height (a negative height is a
		// top-down bitmap).
		if len(head) < 26 {
			return Size{}, fmt.Errorf("%w: BMP header", ErrNoSize)
		}
		w := int64(int32(binary.LittleEndian.Uint32(head[18:])))
		h := int64(int32(binary.LittleEndian.Uint32(head[22:])))
		return sized("BMP", w, abs(h))
	}
	return Size{}, fmt.Errorf("%w: not a PNG, JPEG, WebP, GIF or BMP image", ErrNoSize)
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

func sized(format string, w, h int64) (Size, error) {
	if w <= 0 || h <= 0 || w > 1<<31-1 || h > 1<<31-1 {
		return Size{}, fmt.Errorf("%w: %s size %d×%d", ErrNoSize, format, w, h)
	}
	return Size{Format: format, Width: int(w), Height: int(h), BitDepth: 8}, nil
}

// jpegSize walks a JPEG's marker segments to its frame header (SOFn), whose height and width
// are the image's. br is positioned at the SOI marker.
func jpegSize(br *bufio.Reader) (Size, error) {
	if _, err := br.Discard(2); err != nil {
		return Size{}, fmt.Errorf("%w: JPEG: %v", ErrNoSize, err)
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return Size{}, fmt.Errorf("%w: JPEG: no frame header", ErrNoSize)
		}
		if b != 0xff {
			return Size{}, fmt.Errorf("%w: JPEG: bad marker", ErrNoSize)
		}
		m, err := br.ReadByte()
		for err == nil && m == 0xff { // fill bytes
			m, err = br.ReadByte()
		}
		if err != nil {
			return Size{}, fmt.Errorf("%w: JPEG: no frame header", ErrNoSize)
		}
		switch {
		case m == 0x01 || (m >= 0xd0 && m <= 0xd7): // TEM, RSTn: no length
			continue
		case m == 0xd8 || m == 0xd9 || m == 0xda || m == 0x00:
			// A second SOI, the end, or the scan before any frame header: no size.
			return Size{}, fmt.Errorf("%w: JPEG: no frame header before 0x%02x", ErrNoSize, m)
		}
		var l [2]byte
		if _, err := io.ReadFull(br, l[:]); err != nil {
			return Size{}, fmt.Errorf("%w: JPEG: truncated segment", ErrNoSize)
		}
		n := int(binary.BigEndian.Uint16(l[:]))
		if n < 2 {
			return Size{}, fmt.Errorf("%w: JPEG: bad segment length", ErrNoSize)
		}
		if m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc {
			// SOF0..SOF15 but DHT, JPG and DAC: precision, height, width.
			var f [5]byte
			if n < 7 {
				return Size{}, fmt.Errorf("%w: JPEG: short frame header", ErrNoSize)
			}
			if _, err := io.ReadFull(br, f[:]); err != nil {
				return Size{}, fmt.Errorf("%w: JPEG: truncated frame header", ErrNoSize)
			}
			s, err := sized("JPEG", int64(binary.BigEndian.Uint16(f[3:])), int64(binary.BigEndian.Uint16(f[1:])))
			s.BitDepth = int(f[0])
			return s, err
		}
		if _, err := br.Discard(n - 2); err != nil {
			return Size{}, fmt.Errorf("%w: JPEG: no frame header within %d bytes", ErrNoSize, HeaderReadMax)
		}
	}
}

// WebPSize reads the canvas size from the first 30 bytes of a WebP file (lossy VP8, lossless
// VP8L, or extended VP8X); ok is false when the header is not a valid one.
func WebPSize(b []byte) (w, h int, ok bool) {
	if len(b) < 30 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return 0, 0, false
	}
	switch string(b[12:16]) {
	case "VP8X":
		w = 1 + (int(b[24]) | int(b[25])<<8 | int(b[26])<<16)
		h = 1 + (int(b[27]) | int(b[28])<<8 | int(b[29])<<16)
		return w, h, true
	case "VP8 ":
		if b[23] != 0x9d || b[24] != 0x01 || b[25] != 0x2a {
			return 0, 0, false
		}
		w = int(binary.LittleEndian.Uint16(b[26:28]) & 0x3fff)
		h = int(binary.LittleEndian.Uint16(b[28:30]) & 0x3fff)
		return w, h, w > 0 && h > 0
	case "VP8L":
		if b[20] != 0x2f {
			return 0, 0, false
		}
		bits := binary.LittleEndian.Uint32(b[21:25])
		return 1 + int(bits&0x3fff), 1 + int((bits>>14)&0x3fff), true
	}
	return 0, 0, false
}
