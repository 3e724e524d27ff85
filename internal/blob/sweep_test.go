package blob

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// plant writes a file under the store root (any name, including hidden ones) with a
// modification time age before now.
func plant(t *testing.T, s *FS, rel string, size int, now time.Time, age time.Duration) {
	t.Helper()
	p := filepath.Join(s.Root(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := now.Add(-age)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
}

// tree lists every file and directory under root, relative, with "/" after directories.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func TestSweepOnce_DeletesOnlyExpiredObjects(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		name        string
		prefixes    []string
		wantDeleted int
		wantBytes   float64
		wantTree    []string
	}{
		{
			name:        "whole store: old objects, stale temp files and empty dirs go",
			wantDeleted: 3, wantBytes: 100 + 200 + 300,
			wantTree: []string{
				".hidden/", ".hidden/old.mp4",
				"signing.key.d/", // hidden files inside are kept, so is their dir
				"signing.key.d/.key",
				"speech/",
				"speech/fresh/", "speech/fresh/.tmp-fresh", // a write in progress
				"videos/",
				"videos/mixed/", "videos/mixed/young.jpg",
				"videos/weird/", "videos/weird/name with space.mp4",
				"videos/young/", "videos/young/result.mp4",
			},
		},
		{
			name:     "prefixes limit the sweep",
			prefixes: []string{"videos/"}, wantDeleted: 2, wantBytes: 100 + 200,
			wantTree: []string{
				".hidden/", ".hidden/old.mp4",
				"signing.key.d/", "signing.key.d/.key",
				"speech/",
				"speech/fresh/", "speech/fresh/.tmp-fresh",
				"speech/old/", "speech/old/audio.wav",
				"videos/",
				"videos/mixed/", "videos/mixed/young.jpg",
				"videos/weird/", "videos/weird/name with space.mp4",
				"videos/young/", "videos/young/result.mp4",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestFS(t)
			now := time.Now()
			plant(t, s, "videos/old/result.mp4", 100, now, 3*day)
			plant(t, s, "videos/old/.tmp-crashed", 50, now, 2*time.Hour)
			plant(t, s, "videos/mixed/old.jpg", 200, now, 2*day)
			plant(t, s, "videos/mixed/young.jpg", 7, now, 23*time.Hour)
			plant(t, s, "videos/young/result.mp4", 9, now, time.Minute)
			plant(t, s, "videos/weird/name with space.mp4", 9, now, 9*day)
			plant(t, s, "speech/old/audio.wav", 300, now, 30*day)
			plant(t, s, "speech/fresh/.tmp-fresh", 5, now, 10*time.Minute)
			plant(t, s, ".hidden/old.mp4", 5, now, 30*day)
			plant(t, s, "signing.key.d/.key", 64, now, 30*day)
			if err := os.MkdirAll(filepath.Join(s.Root(), "videos", "empty", "nested"), 0o755); err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			sw := &Sweeper{Store: s, Retention: day, Prefixes: tc.prefixes, Metrics: reg}

			n, err := sw.SweepOnce(context.Background(), now)
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.wantDeleted {
				t.Errorf("deleted = %d, want %d", n, tc.wantDeleted)
			}
			if got := tree(t, s.Root()); !slices.Equal(got, tc.wantTree) {
				t.Errorf("tree after sweep:\n got %s\nwant %s", strings.Join(got, " "), strings.Join(tc.wantTree, " "))
			}
			if got := counterValue(t, reg, "mediagen_blob_swept_files_total"); got != float64(tc.wantDeleted) {
				t.Errorf("swept files metric = %v, want %d", got, tc.wantDeleted)
			}
			if got := counterValue(t, reg, "mediagen_blob_swept_bytes_total"); got != tc.wantBytes {
				t.Errorf("swept bytes metric = %v, want %v", got, tc.wantBytes)
			}

			// A second sweep finds nothing more.
			if n, err := sw.SweepOnce(context.Background(), now); err != nil || n != 0 {
				t.Errorf("second sweep = %d, %v; want 0, nil", n, err)
			}
		})
	}
}

func TestSweepOnce_KeepsRootAndWorksWithoutMetrics(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	now := time.Now()
	plant(t, s, "a.mp4", 1, now, 48*time.Hour)
	sw := &Sweeper{Store: s, Retention: time.Hour}
	if n, err := sw.SweepOnce(context.Background(), now); err != nil || n != 1 {
		t.Fatalf("SweepOnce = %d, %v", n, err)
	}
	if fi, err := os.Stat(s.Root()); err != nil || !fi.IsDir() {
		t.Fatalf("root gone: %v", err)
	}
	// The store still works after its directories were swept away.
	put(t, s, "videos/v/result.mp4", "again")
}

func TestSweepOnce_RejectsBadConfig(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	tests := []struct {
		name string
		sw   *Sweeper
	}{
		{"missing store fails", &Sweeper{Retention: time.Hour}},
		{"zero retention fails", &Sweeper{Store: s}},
		{"negative retention fails", &Sweeper{Store: s, Retention: -time.Hour}},
		{"traversal prefix fails", &Sweeper{Store: s, Retention: time.Hour, Prefixes: []string{"../"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.sw.SweepOnce(context.Background(), time.Now()); err == nil {
				t.Error("SweepOnce succeeded")
			}
			if err := tc.sw.Sweep(context.Background()); err == nil {
				t.Error("Sweep succeeded")
			}
		})
	}
}

func TestSweepOnce_CanceledContextStops(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	now := time.Now()
	plant(t, s, "videos/a/result.mp4", 1, now, 48*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	sw := &Sweeper{Store: s, Retention: time.Hour}
	n, err := sw.SweepOnce(ctx, now)
	if !errors.Is(err, context.Canceled) || n != 0 {
		t.Errorf("SweepOnce = %d, %v; want 0, context.Canceled", n, err)
	}
	if _, err := s.Stat(context.Background(), "videos/a/result.mp4"); err != nil {
		t.Errorf("object deleted by a canceled sweep: %v", err)
	}
}

func TestSweep_LogsOnePassAndReportsErrors(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	plant(t, s, "videos/a/result.mp4", 1, time.Now(), 48*time.Hour)
	sw := &Sweeper{Store: s, Retention: time.Hour}
	if err := sw.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(context.Background(), "videos/a/result.mp4"); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired object kept: %v", err)
	}
	if err := (&Sweeper{Store: s}).Sweep(context.Background()); err == nil {
		t.Error("a sweep without retention succeeded")
	}
}

// failingLister lists one old object whose delete always fails.
type failingLister struct{ old time.Time }

func (l failingLister) List(_ context.Context, _ string, fn func(Info) error) error {
	return fn(Info{Key: "videos/v/result.mp4", Size: 1, ModTime: l.old})
}

func (failingLister) Delete(context.Context, string) error { return errors.New("access denied") }

func TestSweepsCountedByOutcomeFromRegistration(t *testing.T) {
	t.Parallel()
	now := time.Now()
	outcomes := func(reg *prometheus.Registry) map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "mediagen_blob_sweeps_total" {
				for _, m := range mf.GetMetric() {
					got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
		return got
	}
	reg := prometheus.NewRegistry()
	ok := &Sweeper{Store: newTestFS(t), Retention: time.Hour, Metrics: reg}
	ok.RegisterMetrics()
	if got := outcomes(reg); !maps.Equal(got, map[string]float64{"ok": 0, "failed": 0}) {
		t.Fatalf("before any sweep: %v, want both outcomes at 0", got)
	}
	if _, err := ok.SweepOnce(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	// A second sweeper on the registry shares the series.
	failing := &Sweeper{Objects: failingLister{old: now.Add(-48 * time.Hour)}, Retention: time.Hour, Metrics: reg}
	if _, err := failing.SweepOnce(context.Background(), now); err == nil {
		t.Fatal("a sweep whose delete failed succeeded")
	}
	if got := outcomes(reg); !maps.Equal(got, map[string]float64{"ok": 1, "failed": 1}) {
		t.Fatalf("after one good and one failed sweep: %v", got)
	}
}
