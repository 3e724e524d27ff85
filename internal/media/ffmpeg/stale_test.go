package ffmpeg

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// What a process killed mid-run leaves (a scratch directory, a temporary output) is removed
// once it is older than any bounded run could be; fresh ones, which may belong to a live
// process, and unrelated files stay.
func TestRemoveStaleTempRemovesOnlyOldLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := Tools{Timeout: time.Minute}
	now := time.Now()
	old := now.Add(-2 * time.Hour)
	mk := func(name string, isDir bool, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(dir, name)
		var err error
		if isDir {
			err = os.Mkdir(p, 0o700)
			if err == nil {
				err = os.WriteFile(filepath.Join(p, "speech.wav"), []byte("x"), 0o600)
			}
		} else {
			err = os.WriteFile(p, []byte("partial"), 0o600)
		}
		if err == nil {
			err = os.Chtimes(p, mtime, mtime)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := []string{
		mk(ScratchPrefix+"speak-123", true, old),
		mk(TempPrefix+"456.tmp.mp3", false, old),
		mk(ScratchPrefix+"blob-123.mp4", false, old), // blob.LocalFile's copy of an S3 result
	}
	kept := []string{
		mk(ScratchPrefix+"speak-789", true, now), // a live process's
		mk(TempPrefix+"999.tmp.mp4", false, now),
		mk(ScratchPrefix+"blob-456.mp4", false, now),
		mk("mediagen-other", true, old), // not ours
		mk("out.mp3", false, old),
	}
	n, err := tools.RemoveStaleTemp(dir, now)
	if err != nil || n != len(gone) {
		t.Fatalf("removed %d, %v; want %d", n, err, len(gone))
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale %s kept (%v)", filepath.Base(p), err)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
	if n, err := tools.RemoveStaleTemp(filepath.Join(dir, "missing"), now); err != nil || n != 0 {
		t.Errorf("missing directory: %d, %v", n, err)
	}
}
