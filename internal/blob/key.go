package blob

import (
	"fmt"
	"path"
	"strings"
)

// MaxKeyLen bounds the length of a key in bytes.
const MaxKeyLen = 512

// maxSegmentLen is the usual file name limit (NAME_MAX).
const maxSegmentLen = 255

// tempPrefix starts the name of every temporary file. Keys cannot contain it (dot-prefixed
// segments are rejected), so Open never returns a temporary file.
const tempPrefix = ".tmp-"

// ValidateKey reports whether key is a valid object key: a relative slash path of 1 to
// MaxKeyLen bytes made of [A-Za-z0-9._/-], with no empty segment, no "." or ".." segment and no
// segment starting with a dot (those names are reserved for the store). Errors wrap ErrBadKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty", ErrBadKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrBadKey, MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if !keyByte(key[i]) {
			return fmt.Errorf("%w: character %q is not allowed", ErrBadKey, key[i])
		}
	}
	if key[0] == '/' {
		return fmt.Errorf("%w: absolute path", ErrBadKey)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := validSegment(seg); err != nil {
			return err
		}
	}
	return nil
}

func validSegment(seg string) error {
	switch {
	case seg == "":
		return fmt.Errorf("%w: empty path segment", ErrBadKey)
	case seg == "." || seg == "..":
		return fmt.Errorf("%w: relative path segment %q", ErrBadKey, seg)
	case seg[0] == '.':
		return fmt.Errorf("%w: segment starts with a dot", ErrBadKey)
	case len(seg) > maxSegmentLen:
		return fmt.Errorf("%w: segment longer than %d bytes", ErrBadKey, maxSegmentLen)
	}
	for i := 0; i < len(seg); i++ {
		if !keyByte(seg[i]) || seg[i] == '/' {
			return fmt.Errorf("%w: character %q is not allowed", ErrBadKey, seg[i])
		}
	}
	return nil
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/'
}

// contentTypes maps lower-case extensions to media types.
var contentTypes = map[string]string{
	".mp4":  "video/mp4",
	".mov":  "video/quicktime",
	".jpg":  "image/jpeg",
	".png":  "image/png",
	".webp": "image/webp",
	".mp3":  "audio/mpeg",
	".wav":  "audio/wav",
	".m4a":  "audio/mp4",
}

// ContentType is the media type of a key, from its extension (case-insensitive);
// application/octet-stream when the extension is unknown.
func ContentType(key string) string {
	if ct, ok := contentTypes[strings.ToLower(path.Ext(key))]; ok {
		return ct
	}
	return "application/octet-stream"
}
