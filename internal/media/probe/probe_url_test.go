package probe

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/media/safefetch"
)

const oneMiB = 1 << 20

func TestProbeURL_MatchesFFprobeForEveryShapeAndServer(t *testing.T) {
	t.Parallel()
	modes := []probetest.Mode{probetest.Ranges, probetest.NoContentLength, probetest.IgnoreRange, probetest.IgnoreRangeNoLen}
	c := loopbackClient(t)
	for _, s := range probetest.Shapes() {
		for _, mode := range modes {
			t.Run(s.Name+"/"+mode.String(), func(t *testing.T) {
				path := fixture(t, s.Name)
				url, st := serve(t, path, mode)
				res, err := ProbeURL(context.Background(), c, url, Options{AllowHTTP: true})
				if err != nil {
					t.Fatal(err)
				}
				assertDuration(t, res.Duration, reference(t, path))
				assertShape(t, s, res)
				if int64(res.Requests) != st.Requests.Load() || res.BytesRead != st.BytesSent.Load() {
					t.Fatalf("probe reports %d requests / %d bytes, server saw %d / %d",
						res.Requests, res.BytesRead, st.Requests.Load(), st.BytesSent.Load())
				}
				size := fileSize(t, path)
				ranged := mode == probetest.Ranges || mode == probetest.NoContentLength
				switch {
				case ranged && !s.Fragmented:
					if res.BytesRead >= oneMiB || res.Requests > 3 {
						t.Fatalf("non-fragmented probe cost %d requests, %d bytes", res.Requests, res.BytesRead)
					}
				case !ranged:
					// The server ignores Range: a bounded full read, one request.
					if res.Requests != 1 || res.BytesRead != size {
						t.Fatalf("full read cost %d requests, %d of %d bytes", res.Requests, res.BytesRead, size)
					}
				}
				t.Logf("%s %s: %d requests, %d bytes of %d", s.Name, mode, res.Requests, res.BytesRead, size)
			})
		}
	}
}

func assertShape(t *testing.T, s probetest.Shape, res Result) {
	t.Helper()
	if res.HasVideo != s.Video || res.HasAudio != s.Audio || res.Fragmented != s.Fragmented {
		t.Fatalf("video/audio/fragmented = %v/%v/%v, want %v/%v/%v", res.HasVideo, res.HasAudio, res.Fragmented, s.Video, s.Audio, s.Fragmented)
	}
	if s.Video && (res.Width != probetest.VideoWidth || res.Height != probetest.VideoHeight || res.FPS != probetest.VideoFPS) {
		t.Fatalf("video %dx%d @ %v fps", res.Width, res.Height, res.FPS)
	}
	want := "mvhd"
	switch {
	case s.Mehd:
		want = "mehd"
	case s.Fragmented:
		want = "fragments"
	}
	if res.DurationSource != want {
		t.Fatalf("duration from %q, want %q", res.DurationSource, want)
	}
}

// The service's budget case: a multi-gigabyte file with its moov at the end
// costs two range requests and well under 1 MiB.
func TestProbeURL_ThreeGiBMoovAtEndCostsTwoRequests(t *testing.T) {
	t.Parallel()
	path := sparseFixture(t)
	for _, mode := range []probetest.Mode{probetest.Ranges, probetest.NoContentLength} {
		t.Run(mode.String(), func(t *testing.T) {
			url, _ := serve(t, path, mode)
			res, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true})
			if err != nil {
				t.Fatal(err)
			}
			assertDuration(t, res.Duration, reference(t, path))
			if res.Requests > 2 || res.BytesRead >= oneMiB {
				t.Fatalf("cost %d requests, %d bytes", res.Requests, res.BytesRead)
			}
			t.Logf("3 GiB sparse %s: %d requests, %d bytes", mode, res.Requests, res.BytesRead)
		})
	}
}

func TestProbeURL_WholeFileAnswerOverCapIsRefused(t *testing.T) {
	t.Parallel()
	t.Run("declared length", func(t *testing.T) {
		url, st := serve(t, sparseFixture(t), probetest.IgnoreRange)
		res, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true})
		assertIs(t, err, ErrNoRanges)
		if st.Requests.Load() != 1 || res.BytesRead != 0 {
			t.Fatalf("read %d bytes in %d requests", res.BytesRead, st.Requests.Load())
		}
	})
	t.Run("undeclared length", func(t *testing.T) {
		url, _ := serve(t, fixture(t, "moov-at-end"), probetest.IgnoreRangeNoLen)
		_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true, FullReadMax: 100 << 10})
		assertIs(t, err, ErrNoRanges)
	})
}

func TestProbeURL_ChangingETagIsUnstable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"moov-at-end", "sparse"} {
		t.Run(name, func(t *testing.T) {
			path := sparseFixture(t)
			if name != "sparse" {
				path = fixture(t, name)
			}
			url, _ := serve(t, path, probetest.ChangingETag)
			_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true})
			assertIs(t, err, ErrUnstable)
			assertIs(t, err, safefetch.ErrUnsupportedMedia)
		})
	}
}

func TestProbeURL_FileOverSizeCapIsRefusedAfterOneRequest(t *testing.T) {
	t.Parallel()
	url, st := serve(t, sparseFixture(t), probetest.Ranges)
	_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true, MaxFileSize: 1 << 30})
	assertIs(t, err, ErrTooLarge)
	assertIs(t, err, safefetch.ErrTooLarge)
	if st.Requests.Load() != 1 {
		t.Fatalf("%d requests", st.Requests.Load())
	}
}

func TestProbeURL_FileOverSizeCapWithoutRangesIsRefused(t *testing.T) {
	t.Parallel()
	url, _ := serve(t, sparseFixture(t), probetest.IgnoreRange)
	_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true, MaxFileSize: 1 << 30})
	assertIs(t, err, ErrTooLarge)
}

func TestProbeURL_RejectsWhatIsNotMP4(t *testing.T) {
	t.Parallel()
	probetest.RequireFFmpeg(t)
	dir := t.TempDir()
	png, err := probetest.PNG(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"png": png}
	for name, content := range map[string]string{
		"text":  "hello, this is not a video at all\n",
		"html":  "<!doctype html><html><body>Sign in</body></html>",
		"empty": "",
		"short": "ftyp",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			url, _ := serve(t, path, probetest.Ranges)
			_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true})
			assertIs(t, err, ErrNotMP4)
			assertIs(t, err, safefetch.ErrUnsupportedMedia)
		})
	}
}

func TestProbeURL_RejectsTruncatedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, shape string
		keep        func(size int64) int64
	}{
		{"faststart cut inside mdat", "faststart", func(n int64) int64 { return n * 6 / 10 }},
		{"moov at end cut inside moov", "moov-at-end", func(n int64) int64 { return n - 500 }},
		{"moov at end cut inside mdat", "moov-at-end", func(n int64) int64 { return n / 2 }},
		{"fragmented cut inside a fragment", "fragmented", func(n int64) int64 { return n * 7 / 10 }},
		{"cut inside ftyp", "faststart", func(int64) int64 { return 20 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := fixture(t, tc.shape)
			dst := filepath.Join(dir, filepath.Base(tc.name))
			if err := probetest.Truncate(dst, src, tc.keep(fileSize(t, src))); err != nil {
				t.Fatal(err)
			}
			url, _ := serve(t, dst, probetest.Ranges)
			_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true})
			assertIs(t, err, ErrTruncated)
		})
	}
}

func TestProbeURL_DurationOverLimitIsRefused(t *testing.T) {
	t.Parallel()
	url, _ := serve(t, fixture(t, "faststart"), probetest.Ranges)
	_, err := ProbeURL(context.Background(), loopbackClient(t), url, Options{AllowHTTP: true, MaxDuration: 2 * time.Second})
	assertIs(t, err, ErrBadDuration)
}

func TestProbeURL_ProductionClientRefusesLoopbackWithoutFetching(t *testing.T) {
	t.Parallel()
	url, st := serve(t, fixture(t, "faststart"), probetest.Ranges)
	c := safefetch.New(safefetch.Options{})
	_, err := ProbeURL(context.Background(), c, url, Options{AllowHTTP: true})
	assertIs(t, err, safefetch.ErrForbiddenAddress)
	_, err = ProbeURL(context.Background(), c, url, Options{})
	assertIs(t, err, safefetch.ErrForbiddenScheme)
	if st.Requests.Load() != 0 {
		t.Fatalf("server saw %d requests", st.Requests.Load())
	}
}

func TestProbeURL_NoRedirectsOptionRefusesRedirects(t *testing.T) {
	t.Parallel()
	target, _ := serve(t, fixture(t, "faststart"), probetest.Ranges)
	redir := httptest.NewServer(http.RedirectHandler(target, http.StatusFound))
	defer redir.Close()
	c := loopbackClient(t)
	if _, err := ProbeURL(context.Background(), c, redir.URL, Options{AllowHTTP: true}); err != nil {
		t.Fatalf("redirect allowed by default: %v", err)
	}
	_, err := ProbeURL(context.Background(), c, redir.URL, Options{AllowHTTP: true, NoRedirects: true})
	assertIs(t, err, safefetch.ErrRedirect)
}

func TestProbeURL_ErrorStatusIsReported(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := ProbeURL(context.Background(), loopbackClient(t), srv.URL, Options{AllowHTTP: true})
	assertIs(t, err, safefetch.ErrHTTPStatus)
}

func assertIs(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
}
