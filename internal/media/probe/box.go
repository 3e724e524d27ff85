package probe

import (
	"encoding/binary"
	"fmt"
	"io"
)

// boxHeader is one ISO BMFF box header as found in the file.
type boxHeader struct {
	typ    string
	off    int64 // of the header
	size   int64 // header + payload
	hdrLen int64
}

func (h boxHeader) payloadOff() int64 { return h.off + h.hdrLen }
func (h boxHeader) end() int64        { return h.off + h.size }

// readBoxHeader reads the header at off inside a parent ending at limit.
// The type is returned even when the size is wrong, so the caller can say
// "not an MP4" rather than "truncated" for a file that never was one.
func readBoxHeader(r io.ReaderAt, off, limit int64) (boxHeader, error) {
	h := boxHeader{off: off, hdrLen: 8}
	if limit-off < 8 {
		return h, fmt.Errorf("%w: %d stray bytes at %d", ErrTruncated, limit-off, off)
	}
	var buf [16]byte
	n := min(limit-off, 16)
	if _, err := r.ReadAt(buf[:n], off); err != nil && err != io.EOF {
		return h, err
	}
	size := int64(binary.BigEndian.Uint32(buf[:4]))
	h.typ = string(buf[4:8])
	switch size {
	case 0: // extends to the end of the parent (last box of a file)
		size = limit - off
	case 1:
		if n < 16 {
			return h, fmt.Errorf("%w: largesize header cut at %d", ErrTruncated, off)
		}
		large := binary.BigEndian.Uint64(buf[8:16])
		if large > 1<<62 {
			return h, fmt.Errorf("%w: box %q claims %d bytes", ErrTruncated, h.typ, large)
		}
		size, h.hdrLen = int64(large), 16
	}
	h.size = size
	if !printableType(h.typ) {
		return h, fmt.Errorf("%w: box type %q at %d", ErrNotMP4, h.typ, off)
	}
	if size < h.hdrLen {
		return h, fmt.Errorf("%w: box %q of %d bytes at %d", ErrNotMP4, h.typ, size, off)
	}
	if off+size > limit {
		return h, fmt.Errorf("%w: box %q at %d needs %d bytes, %d left", ErrTruncated, h.typ, off, size, limit-off)
	}
	return h, nil
}

// printableType accepts the 4CCs muxers write: printable ASCII, plus the
// QuickTime © (0xA9) prefix of metadata atoms.
func printableType(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if (c < 0x20 || c > 0x7e) && c != 0xa9 {
			return false
		}
	}
	return len(t) == 4
}

// firstBoxTypes are the boxes a real MP4/MOV can start with. Anything else
// as the first box means the bytes are something else (PNG, HTML, text…).
var firstBoxTypes = map[string]bool{
	"ftyp": true, "styp": true, "moov": true, "mdat": true, "free": true,
	"skip": true, "wide": true, "pnot": true, "uuid": true,
}
