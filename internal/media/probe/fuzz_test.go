package probe

import (
	"os"
	"testing"

	"mediagen/internal/media/probe/probetest"
)

// FuzzBoxWalk: any bytes either probe to a sane result or fail with an
// error; never a panic, a hang or an unbounded read.
func FuzzBoxWalk(f *testing.F) {
	good := simpleMP4(1000, 2000)
	f.Add(good)
	f.Add(simpleMP4(90000, 123457))
	f.Add(fragmentedMP4(false))
	f.Add(fragmentedMP4(true))
	f.Add(good[:len(good)/2])
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add([]byte{0, 0, 0, 1, 'm', 'd', 'a', 't', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	// A real moov from ffmpeg when available (the seed corpus must not
	// depend on it, so it is an extra).
	if probetest.HaveFFmpeg() == nil {
		if b, err := os.ReadFile(fixtureForFuzz(f)); err == nil && len(b) < 8<<20 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := probeBytes(data, Options{MaxBoxes: 1000})
		if err != nil {
			if !isKind(err) {
				t.Fatalf("error without a kind: %v", err)
			}
			return
		}
		if !(res.Duration > 0) || res.Duration > defaultMaxDuration.Seconds() {
			t.Fatalf("accepted duration %v", res.Duration)
		}
		if res.BytesRead > int64(len(data))+64<<10 {
			t.Fatalf("read %d bytes of a %d-byte input", res.BytesRead, len(data))
		}
	})
}

func fixtureForFuzz(f *testing.F) string {
	f.Helper()
	dir := f.TempDir()
	p, err := probetest.Generate(f.Context(), dir, probetest.Shape{Name: "seed", File: "seed.mp4", Audio: true, Args: []string{"-c:a", "aac", "-t", "0.5"}})
	if err != nil {
		return ""
	}
	return p
}
