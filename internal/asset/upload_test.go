package asset

import (
	"bytes"
	"testing"
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
