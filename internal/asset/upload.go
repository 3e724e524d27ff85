package asset

import (
	"bytes"
	"fmt"
	"io"

	"mediagen/internal/media/pixels"
)

// ImageInfo is what CheckImage learned of an image.
type ImageInfo struct {
	Format        string // PNG, JPEG or WebP
	Ext           string // png, jpg or webp
	Width, Height int
}

// CheckImage reads an image the way the library checks an Image asset's stored copy: the
// type decided from its leading bytes (PNG, JPEG or WebP; never a declared Content-Type),
// then its pixel size from its header, which must be within the pixel budget
// (pixels.MaxImagePixels). It reads only the header: nothing is decoded, so a decompression
// bomb costs what its header costs. The error's text is meant for the client: it names what
// was found (and the budget), never a server detail.
func CheckImage(r io.Reader) (ImageInfo, error) {
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return ImageInfo{}, fmt.Errorf("the image could not be read")
	}
	head = head[:n]
	m := sniff(head)
	if m.kind != TypeImage || !m.supported() {
		return ImageInfo{}, fmt.Errorf("the file is %s, not a PNG, JPEG or WebP image", describeFound(m))
	}
	size, err := pixels.ReadSize(io.MultiReader(bytes.NewReader(head), r))
	if err != nil {
		return ImageInfo{}, fmt.Errorf("the %s image could not be read", m.format)
	}
	if err := size.Check(); err != nil {
		return ImageInfo{}, err
	}
	return ImageInfo{Format: m.format, Ext: m.ext, Width: size.Width, Height: size.Height}, nil
}

func describeFound(m media) string {
	if m.format == "" {
		return "of an unrecognized type"
	}
	return "a " + m.format + " file"
}

// ImageFormat decides from an image's leading bytes whether it is one the first-frame path
// accepts (PNG, JPEG, WebP), and the extension of its stored copy. When it is not, format
// describes what was found.
func ImageFormat(head []byte) (format, ext string, ok bool) {
	m := sniff(head)
	if m.kind != TypeImage || !m.supported() {
		return "the file is " + describeFound(m), "", false
	}
	return m.format, m.ext, true
}
