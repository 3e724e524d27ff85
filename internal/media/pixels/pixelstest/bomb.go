// Package pixelstest writes decompression bombs for tests and benchmarks: PNG files whose
// header declares a large canvas and whose pixels are all zero, so the file is about a
// thousandth of what a decoder has to hold. Nothing is allocated at the declared size: the
// zlib stream is one compressed run of zeros repeated, written as it goes.
package pixelstest

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
)

// PNG colour types (PNG specification, IHDR).
const (
	Gray      = 0
	RGB       = 2
	GrayAlpha = 4
	RGBA      = 6
)

// PNGHeader is the 33 bytes a PNG starts with (signature and IHDR): enough for any
// header-level check, and nothing a decoder could fill a frame from.
func PNGHeader(width, height uint32, bitDepth, colorType byte) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], width)
	binary.BigEndian.PutUint32(ihdr[4:], height)
	ihdr[8], ihdr[9] = bitDepth, colorType
	writeChunk(&b, "IHDR", ihdr)
	return b.Bytes()
}

// channels is the samples per pixel of a colour type.
func channels(colorType byte) int {
	switch colorType {
	case RGB:
		return 3
	case GrayAlpha:
		return 2
	case RGBA:
		return 4
	}
	return 1
}

// RawSize is the length of the decompressed image data of a width x height PNG: one filter
// byte per row, then the row's samples.
func RawSize(width, height uint32, bitDepth, colorType byte) int64 {
	row := (int64(width)*int64(channels(colorType))*int64(bitDepth) + 7) / 8
	return int64(height) * (1 + row)
}

// WritePNG writes a complete, valid, all-black PNG of width x height to w. Its image data is
// RawSize zero bytes: every row has filter 0 and zero samples. The deflate stream is a
// compressed block of zeros, flushed to a byte boundary and repeated (a deflate stream is a
// sequence of blocks, and a back-reference into the previous copy reads zeros either way),
// so writing a 2 GB image costs a few milliseconds and a few megabytes at most.
func WritePNG(w io.Writer, width, height uint32, bitDepth, colorType byte) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(PNGHeader(width, height, bitDepth, colorType)); err != nil {
		return err
	}
	raw := RawSize(width, height, bitDepth, colorType)
	const unit = 16 << 20 // zeros per repeated block
	block := compressZeros(unit, false)
	var z bytes.Buffer
	z.Write([]byte{0x78, 0x01}) // zlib header: deflate, 32 KiB window, no dictionary
	for left := raw; left > 0; {
		if left > unit {
			z.Write(block)
			left -= unit
		} else {
			z.Write(compressZeros(left, true))
			left = 0
		}
		if z.Len() >= 1<<20 || left == 0 {
			if left == 0 {
				// Adler-32 of n zero bytes: a stays 1, b adds a (1) per byte.
				var sum [4]byte
				binary.BigEndian.PutUint32(sum[:], uint32(raw%65521)<<16|1)
				z.Write(sum[:])
			}
			writeChunk(bw, "IDAT", z.Bytes())
			z.Reset()
		}
	}
	writeChunk(bw, "IEND", nil)
	return bw.Flush()
}

// compressZeros is the raw deflate of n zero bytes: flushed to a byte boundary (more blocks
// may follow) or, with final, closed.
func compressZeros(n int64, final bool) []byte {
	var out bytes.Buffer
	fw, _ := flate.NewWriter(&out, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, int64(len(zeros)))
		fw.Write(zeros[:k])
		n -= k
	}
	if final {
		fw.Close()
	} else {
		fw.Flush()
	}
	return out.Bytes()
}

func writeChunk(w io.Writer, typ string, data []byte) {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(data)))
	copy(hdr[4:], typ)
	crc := crc32.NewIEEE()
	crc.Write(hdr[4:])
	crc.Write(data)
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc.Sum32())
	w.Write(hdr[:])
	w.Write(data)
	w.Write(sum[:])
}
