package probe

import (
	"errors"
	"strings"
	"testing"

	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
)

// mp4Sized is a one-second MP4 whose video track states tkhd's display size and the sample
// entry's coded size separately.
func mp4Sized(tw, th uint32, cw, ch uint16) []byte {
	trak := mkBox("trak", tkhdBox(1, tw, th), mkBox("mdia", mdhdBox(12800, 25*512), hdlrBox("vide"),
		mkBox("minf", mkBox("stbl", stsdVisual(cw, ch), sttsBox([2]uint32{25, 512})))))
	out := ftypBox("isom")
	out = append(out, mkBox("moov", mvhdBox(1000, 1000), trak)...)
	return append(out, mkBox("mdat", make([]byte, 64))...)
}

// A video track that states a frame over the budget — in its sample entry or in its track
// header, whichever is larger — is refused from the header with the size and the budget in
// the public message; a DCI 8K frame is within it.
func TestFrameOverThePixelBudgetIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		file   []byte
		refuse string
	}{
		{"dci 8k", mp4Sized(8192, 4320, 8192, 4320), ""},
		{"coded size over", mp4Sized(320, 240, 16000, 16000), "16000×16000"},
		{"display size over, coded size small", mp4Sized(9000, 9000, 320, 240), "9000×9000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := probeBytes(c.file, Options{})
			if c.refuse == "" {
				if err != nil || res.Width != 8192 {
					t.Fatalf("%+v %v", res, err)
				}
				return
			}
			if !errors.Is(err, ErrFrameTooLarge) || !errors.Is(err, pixels.ErrOverBudget) || !errors.Is(err, safefetch.ErrUnsupportedMedia) {
				t.Fatalf("err %v, want ErrFrameTooLarge", err)
			}
			msg := PublicMessage(err)
			if !strings.Contains(msg, c.refuse) || !strings.Contains(msg, "35,389,440 pixels") || !strings.HasPrefix(msg, "The video frame is ") {
				t.Errorf("public message %q", msg)
			}
		})
	}
}
