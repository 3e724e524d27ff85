package probe

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/media/safefetch"
)

// Files made by ffmpeg are shared by the tests of this package: one temp
// directory per test binary, removed by TestMain, each file made once.
var fixtures struct {
	dir   string
	mu    sync.Mutex
	paths map[string]string
	durs  map[string]float64
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "probe-fixtures-")
	if err != nil {
		panic(err)
	}
	fixtures.dir = dir
	fixtures.paths = map[string]string{}
	fixtures.durs = map[string]float64{}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func shapeByName(t *testing.T, name string) probetest.Shape {
	t.Helper()
	for _, s := range probetest.Shapes() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no shape %q", name)
	return probetest.Shape{}
}

// fixture returns the file of a shape, making it on first use.
func fixture(t *testing.T, name string) string {
	t.Helper()
	probetest.RequireFFmpeg(t)
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if p, ok := fixtures.paths[name]; ok {
		return p
	}
	p, err := probetest.Generate(context.Background(), fixtures.dir, shapeByName(t, name))
	if err != nil {
		t.Fatal(err)
	}
	fixtures.paths[name] = p
	return p
}

// sparseFixture is ftyp + a 3 GiB mdat (a hole) + the moov of moov-at-end.
func sparseFixture(t *testing.T) string {
	t.Helper()
	src := fixture(t, "moov-at-end")
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	const key = "sparse-3GiB"
	if p, ok := fixtures.paths[key]; ok {
		return p
	}
	p := filepath.Join(fixtures.dir, "sparse.mp4")
	if err := probetest.MakeSparse(p, src, 3<<30); err != nil {
		t.Fatal(err)
	}
	fixtures.paths[key] = p
	return p
}

// reference is ffprobe's format duration of path.
func reference(t *testing.T, path string) float64 {
	t.Helper()
	fixtures.mu.Lock()
	defer fixtures.mu.Unlock()
	if d, ok := fixtures.durs[path]; ok {
		return d
	}
	d, err := probetest.FFprobeDuration(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	fixtures.durs[path] = d
	return d
}

func assertDuration(t *testing.T, got, want float64) {
	t.Helper()
	if math.Abs(got-want) >= 0.001 {
		t.Fatalf("duration %.6f s, ffprobe says %.6f s", got, want)
	}
}

// loopbackClient is the sandbox's safefetch configuration.
func loopbackClient(t *testing.T) *safefetch.Client {
	t.Helper()
	c := safefetch.New(safefetch.Options{AllowLoopback: true})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func serve(t *testing.T, path string, mode probetest.Mode) (string, *probetest.Stats) {
	t.Helper()
	srv, st := probetest.Serve(path, mode)
	t.Cleanup(srv.Close)
	return srv.URL + "/media", st
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
