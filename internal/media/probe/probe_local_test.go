package probe

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"testing"
	"time"

	"mediagen/internal/media/probe/probetest"
)

func TestProbeReaderAt_LocalFilesMatchFFprobe(t *testing.T) {
	t.Parallel()
	for _, s := range probetest.Shapes() {
		t.Run(s.Name, func(t *testing.T) {
			path := fixture(t, s.Name)
			res := probeFile(t, path, Options{})
			assertDuration(t, res.Duration, reference(t, path))
			assertShape(t, s, res)
			if !s.Fragmented && res.BytesRead >= oneMiB {
				t.Fatalf("read %d bytes", res.BytesRead)
			}
		})
	}
}

func TestProbeReaderAt_SparseThreeGiBFileReadsLittle(t *testing.T) {
	t.Parallel()
	path := sparseFixture(t)
	res := probeFile(t, path, Options{})
	assertDuration(t, res.Duration, reference(t, path))
	if res.BytesRead >= oneMiB || res.Requests > 2 {
		t.Fatalf("%d reads, %d bytes", res.Requests, res.BytesRead)
	}
}

func probeFile(t *testing.T, path string, opt Options) Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := ProbeReaderAt(context.Background(), f, fileSize(t, path), opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func probeBytes(b []byte, opt Options) (Result, error) {
	return ProbeReaderAt(context.Background(), bytes.NewReader(b), int64(len(b)), opt)
}

func TestProbeReaderAt_DurationIsExactFromTimescale(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		timescale uint32
		duration  uint64
		want      float64
	}{
		{"90 kHz", 90000, 123457, 123457.0 / 90000},
		{"1 kHz", 1000, 5084, 5.084},
		{"64-bit mvhd", 1 << 30, 5 << 30, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := probeBytes(simpleMP4(tc.timescale, tc.duration), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Duration != tc.want || res.DurationSource != "mvhd" {
				t.Fatalf("duration %v from %s, want %v", res.Duration, res.DurationSource, tc.want)
			}
			if res.Width != 320 || res.Height != 240 || res.FPS != 25 || !res.HasVideo || res.HasAudio {
				t.Fatalf("tracks: %+v", res)
			}
		})
	}
}

func TestProbeReaderAt_BadDurationsAreRejected(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		file []byte
		opt  Options
	}{
		{"zero mvhd and empty tracks", append(ftypBox("isom"), mkBox("moov", mvhdBox(1000, 0))...), Options{}},
		{"zero timescale", simpleMP4(0, 5000), Options{}},
		{"seven hours", simpleMP4(1000, 7*3600*1000), Options{}},
		{"over a configured limit", simpleMP4(1000, 61_000), Options{MaxDuration: time.Minute}},
		{"fragmented without fragments", append(ftypBox("iso5"), mkBox("moov", mvhdBox(1000, 0), videoTrak(1, 0, false), mkBox("mvex"))...), Options{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := probeBytes(tc.file, tc.opt)
			assertIs(t, err, ErrBadDuration)
		})
	}
	if _, err := probeBytes(simpleMP4(1000, 7*3600*1000), Options{MaxDuration: 8 * time.Hour}); err != nil {
		t.Fatalf("a raised limit still refuses 7 h: %v", err)
	}
}

func TestProbeReaderAt_MalformedLayoutsAreRejected(t *testing.T) {
	t.Parallel()
	good := simpleMP4(1000, 2000)
	hugeMoov := append(ftypBox("isom"), be32(1<<20)...)
	hugeMoov = append(hugeMoov, "moov"...)
	tinyBox := append(ftypBox("isom"), be32(4)...)
	tinyBox = append(tinyBox, "free"...)
	bigLarge := append(ftypBox("isom"), be32(1)...)
	bigLarge = append(bigLarge, "mdat"...)
	bigLarge = append(bigLarge, be64(1<<40)...)
	twoMoov := append(append([]byte{}, good...), mkBox("moov", mvhdBox(1000, 1))...)
	badChild := append(ftypBox("isom"), mkBox("moov", mvhdBox(1000, 2000), be32(500), []byte("trak"))...)
	cases := []struct {
		name string
		file []byte
		want error
	}{
		{"png signature", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x40"), ErrNotMP4},
		{"text", []byte("hello world, not a movie"), ErrNotMP4},
		{"no moov", append(ftypBox("isom"), mkBox("mdat", make([]byte, 32))...), ErrNotMP4},
		{"two moov boxes", twoMoov, ErrNotMP4},
		{"box smaller than its header", tinyBox, ErrNotMP4},
		{"non-printable box type", append(ftypBox("isom"), 0, 0, 0, 8, 1, 2, 3, 4), ErrNotMP4},
		{"fragment without mvex", append(append([]byte{}, good...), mkBox("moof", mkFull("mfhd", 0, 0, be32(1)))...), ErrNotMP4},
		{"moov past the end", hugeMoov, ErrTruncated},
		{"largesize past the end", bigLarge, ErrTruncated},
		{"child box past its parent", badChild, ErrTruncated},
		{"stray bytes after the last box", append(append([]byte{}, good...), 0, 0, 0), ErrTruncated},
		{"ftyp cut", good[:20], ErrTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := probeBytes(tc.file, Options{})
			assertIs(t, err, tc.want)
		})
	}
}

func TestProbeReaderAt_FragmentsAreSummed(t *testing.T) {
	t.Parallel()
	for _, withMehd := range []bool{false, true} {
		res, err := probeBytes(fragmentedMP4(withMehd), Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, src := 2.0, "fragments"
		if withMehd {
			src = "mehd"
		}
		if res.Duration != want || res.DurationSource != src || !res.Fragmented || res.FPS != 25 {
			t.Fatalf("mehd=%v: %+v", withMehd, res)
		}
	}
}

func TestProbeReaderAt_TooManyBoxesIsRefused(t *testing.T) {
	t.Parallel()
	f := ftypBox("isom")
	for range 10 {
		f = append(f, mkBox("free")...)
	}
	_, err := probeBytes(f, Options{MaxBoxes: 5})
	assertIs(t, err, ErrNotMP4)
}

func TestProbeReaderAt_SizeCapAndEmptyFile(t *testing.T) {
	t.Parallel()
	_, err := ProbeReaderAt(context.Background(), bytes.NewReader(nil), 20<<30, Options{})
	assertIs(t, err, ErrTooLarge)
	_, err = probeBytes(nil, Options{})
	assertIs(t, err, ErrNotMP4)
}

func TestProbeReaderAt_CancelledContextStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := simpleMP4(1000, 2000)
	_, err := ProbeReaderAt(ctx, bytes.NewReader(b), int64(len(b)), Options{})
	assertIs(t, err, context.Canceled)
}

// The duration a header declares is one field anyone can rewrite; the samples are what gets
// decoded, enhanced and billed. A header shorter than its samples, by any amount, gives way
// to them; an honest file, or one whose edit list trims its media, keeps the header's exact
// value (what ffprobe reports).
func TestProbeReaderAt_HeaderShorterThanItsSamplesIsNotBelieved(t *testing.T) {
	t.Parallel()
	withEdits := func(mvhd uint64, trak []byte) []byte {
		out := ftypBox("isom")
		out = append(out, mkBox("moov", mvhdBox(1000, mvhd), trak)...)
		return append(out, mkBox("mdat", make([]byte, 64))...)
	}
	cases := []struct {
		name   string
		file   []byte
		want   float64
		source string
	}{
		{"mvhd rewritten from 600 s to 1 s", mp4WithTrack(1000, 1000, 600*25), 600, "tracks"},
		{"mvhd 0.4 s short of its samples", mp4WithTrack(1000, 2000, 60), 2.4, "tracks"},
		{"mvhd 0.75 s over 1.2 s of samples (the issue's source)", mp4WithTrack(1000, 750, 30), 1.2, "tracks"},
		{"mvhd 1 ms short of its samples", mp4WithTrack(1000, 1999, 50), 2, "tracks"},
		{"mvhd agrees with its samples", mp4WithTrack(1000, 2000, 50), 2, "mvhd"},
		{"mvhd longer than its samples", mp4WithTrack(1000, 9000, 50), 9, "mvhd"},
		{"edit list trims 10 s of media to 2 s", withEdits(2000, editedTrak(1, 250, [2]int64{2000, 0})), 2, "mvhd"},
		{"edit list skips 8 s of 10 s", withEdits(2000, editedTrak(1, 250, [2]int64{2000, 8 * 12800})), 2, "mvhd"},
		{"edit list and mvhd both rewritten to 1 s", withEdits(1000, editedTrak(1, 250, [2]int64{1000, 0})), 1, "mvhd"},
		{"empty edit then 10 s, mvhd says 1 s", withEdits(1000, editedTrak(1, 250, [2]int64{3000, -1}, [2]int64{10000, 0})), 13, "tracks"},
		{"two edits show the media twice", withEdits(1000, editedTrak(1, 50, [2]int64{2000, 0}, [2]int64{2000, 0})), 4, "tracks"},
		{"fragments under a mehd of 2 s", fragmentedMP4Mehd(2000), 2, "mehd"},
		{"fragments under a mehd rewritten to 1 s", fragmentedMP4Mehd(1000), 2, "fragments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := probeBytes(tc.file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(res.Duration-tc.want) > 1e-9 || res.DurationSource != tc.source {
				t.Fatalf("duration %v from %s, want %v from %s", res.Duration, res.DurationSource, tc.want, tc.source)
			}
		})
	}
}

// The same on a file ffmpeg made (video and AAC audio): ffprobe reports the rewritten mvhd
// (1 s) while ffmpeg decodes all 3.2 s; the probe measures the 3.2 s.
func TestProbeReaderAt_RewrittenMvhdOfARealFileMeasuresItsStreams(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(fixture(t, "faststart"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("mvhd"))
	if i < 0 || b[i+4] != 0 {
		t.Fatal("no version 0 mvhd")
	}
	scale := binary.BigEndian.Uint32(b[i+16:])
	binary.BigEndian.PutUint32(b[i+20:], scale) // 1 s
	res, err := probeBytes(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Duration-3.2) > 0.05 || res.DurationSource != "tracks" {
		t.Fatalf("duration %v from %s, want 3.2 from tracks", res.Duration, res.DurationSource)
	}
}
