package asset

import (
	"encoding/binary"
	"testing"

	"mediagen/internal/media/pixels"
)

func TestSniff(t *testing.T) {
	t.Parallel()
	mp4, m4a := clips(t)
	ftyp := func(brand string) []byte {
		b := make([]byte, 32)
		binary.BigEndian.PutUint32(b, 24)
		copy(b[4:], "ftyp"+brand)
		return b
	}
	vp8l := append([]byte("RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f"), 0x3f, 0xc0, 0x0f, 0x00, 0, 0, 0, 0, 0, 0)
	cases := []struct {
		name         string
		b            []byte
		kind, format string
		ok           bool
	}{
		{"png", pngBytes(t, 4, 4), TypeImage, "PNG", true},
		{"jpeg", jpegBytes(t, 4, 4), TypeImage, "JPEG", true},
		{"webp", vp8l, TypeImage, "WebP", true},
		{"gif", []byte("GIF89a\x01\x00\x01\x00"), TypeImage, "GIF", false},
		{"rendered mp4", mp4, TypeVideo, "MP4", true},
		{"rendered m4a", m4a, TypeAudio, "M4A", true},
		{"ftyp isom", ftyp("isom"), TypeVideo, "MP4", true},
		{"ftyp qt", ftyp("qt  "), TypeVideo, "MOV", true},
		{"ftyp M4A", ftyp("M4A "), TypeAudio, "M4A", true},
		{"ftyp heic", ftyp("heic"), TypeImage, "HEIF/AVIF", false},
		{"quicktime without ftyp", append([]byte{0, 0, 0, 8}, "wide\x00\x00\x00\x10mdat"...), TypeVideo, "MOV", true},
		{"mp3 id3", []byte("ID3\x04\x00\x00\x00\x00\x00\x00"), TypeAudio, "MP3", true},
		{"mp3 frame", []byte{0xFF, 0xFB, 0x90, 0x64, 0, 0}, TypeAudio, "MP3", true},
		{"wav", []byte("RIFF\x24\x00\x00\x00WAVEfmt \x10\x00\x00\x00"), TypeAudio, "WAV", true},
		{"webm", []byte("\x1a\x45\xdf\xa3\x01\x00\x00\x00\x00\x00\x00\x1f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\xf2\x81\x04\x42\xf3\x81\x08\x42\x82\x84webm"), TypeVideo, "WebM", false},
		{"html", []byte("<!doctype html><html>"), "", "", false},
		{"empty-ish", []byte{0, 0, 0}, "", "", false},
	}
	for _, c := range cases {
		m := sniff(c.b[:min(len(c.b), sniffLen)])
		if m.kind != c.kind || m.format != c.format || m.supported() != c.ok {
			t.Errorf("%s: %+v, want %s %s supported=%v", c.name, m, c.kind, c.format, c.ok)
		}
	}
	if w, h, ok := pixels.WebPSize(vp8l); !ok || w != 64 || h != 64 {
		t.Errorf("webp size %dx%d %v", w, h, ok)
	}
	vp8x := []byte("RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00\x3f\x01\x00\xef\x00\x00")
	if w, h, ok := pixels.WebPSize(vp8x); !ok || w != 320 || h != 240 {
		t.Errorf("webp vp8x size %dx%d %v", w, h, ok)
	}
}
