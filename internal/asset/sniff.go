package asset

import (
	"encoding/binary"
	"net/http"
	"strings"
)

// sniffLen is how many leading bytes the type is decided from (http.DetectContentType's).
const sniffLen = 512

// media is what the leading bytes of a file say it is.
type media struct {
	kind   string // TypeImage, TypeVideo, TypeAudio; "" when unknown
	format string // PNG, JPEG, WebP, MP4, MOV, M4A, MP3, WAV, or the name of an unsupported format
	ext    string // extension of the stored copy; "" when the format is not accepted
	// isoBMFF: an MP4/MOV-family file, whose real kind (video or audio only) is decided by
	// probing the stored copy.
	isoBMFF bool
}

func (m media) supported() bool { return m.ext != "" }

// sniff identifies the media type from the first bytes: MP4/MOV by their ftyp box (brand qt
// is MOV, M4A/M4B is audio), QuickTime files without ftyp by their first box, MP3 by ID3 or an
// MPEG audio frame header, the rest by http.DetectContentType. What the server's Content-Type
// says is never trusted.
func sniff(b []byte) media {
	if len(b) >= 12 && string(b[4:8]) == "ftyp" {
		brand := string(b[8:12])
		switch {
		case brand == "qt  ":
			return media{kind: TypeVideo, format: "MOV", ext: "mov", isoBMFF: true}
		case brand == "M4A " || brand == "M4B " || brand == "M4P ":
			return media{kind: TypeAudio, format: "M4A", ext: "m4a", isoBMFF: true}
		case strings.HasPrefix(brand, "3g"):
			return media{kind: TypeVideo, format: "3GP"}
		case brand == "heic" || brand == "heix" || brand == "mif1" || brand == "msf1" || brand == "avif":
			return media{kind: TypeImage, format: "HEIF/AVIF"}
		}
		return media{kind: TypeVideo, format: "MP4", ext: "mp4", isoBMFF: true}
	}
	if len(b) >= 8 {
		switch string(b[4:8]) {
		case "moov", "mdat", "wide", "free", "skip", "pnot":
			if binary.BigEndian.Uint32(b[:4]) >= 8 {
				return media{kind: TypeVideo, format: "MOV", ext: "mov", isoBMFF: true}
			}
		}
	}
	switch ct := http.DetectContentType(b); ct {
	case "image/png":
		return media{kind: TypeImage, format: "PNG", ext: "png"}
	case "image/jpeg":
		return media{kind: TypeImage, format: "JPEG", ext: "jpg"}
	case "image/webp":
		return media{kind: TypeImage, format: "WebP", ext: "webp"}
	case "image/gif":
		return media{kind: TypeImage, format: "GIF"}
	case "image/bmp":
		return media{kind: TypeImage, format: "BMP"}
	case "image/x-icon", "image/vnd.microsoft.icon":
		return media{kind: TypeImage, format: "ICO"}
	case "audio/mpeg":
		return media{kind: TypeAudio, format: "MP3", ext: "mp3"}
	case "audio/wave":
		return media{kind: TypeAudio, format: "WAV", ext: "wav"}
	case "audio/aiff", "audio/basic", "audio/midi", "application/ogg", "audio/ogg":
		return media{kind: TypeAudio, format: strings.ToUpper(ct[strings.IndexByte(ct, '/')+1:])}
	case "video/webm":
		return media{kind: TypeVideo, format: "WebM"}
	case "video/avi":
		return media{kind: TypeVideo, format: "AVI"}
	}
	if mpegAudioFrame(b) {
		return media{kind: TypeAudio, format: "MP3", ext: "mp3"}
	}
	return media{}
}

// mpegAudioFrame reports an MPEG audio frame header at the start: 11 sync bits, a valid
// version and layer III (MP3), a bitrate index that is neither free nor bad, and a valid
// sample-rate index.
func mpegAudioFrame(b []byte) bool {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return false
	}
	version := (b[1] >> 3) & 3
	layer := (b[1] >> 1) & 3
	bitrate := b[2] >> 4
	rate := (b[2] >> 2) & 3
	return version != 1 && layer == 1 && bitrate != 0 && bitrate != 15 && rate != 3
}

// describe names a kind for messages.
func describe(kind string) string {
	switch kind {
	case TypeImage:
		return "an image"
	case TypeVideo:
		return "a video"
	case TypeAudio:
		return "an audio file"
	}
	return "an unknown format"
}
