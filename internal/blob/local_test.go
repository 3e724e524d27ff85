package blob

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
)

// remoteOnly hides a filesystem store's paths, as an object store has none: LocalFile must
// download a copy.
type remoteOnly struct{ *FS }

func (remoteOnly) LocalPath(string) (string, bool) { return "", false }

// The local copy LocalFile makes of an object-store result carries the scratch prefix, so a
// copy a killed process left behind is removed by the startup sweep once it is stale (a
// 48-hour-old one survived every restart before); a fresh one, possibly a live process's,
// stays.
func TestLocalCopyLeftByAKilledProcessIsSweptAtStart(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // os.CreateTemp("") and the sweep both use os.TempDir
	fsStore, err := NewFS(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := fsStore.Put(ctx, "videos/video_1/result.mp4", strings.NewReader("mp4 bytes")); err != nil {
		t.Fatal(err)
	}
	s := remoteOnly{fsStore}
	left, _, err := LocalFile(ctx, s, "videos/video_1/result.mp4") // never released: the process "died"
	if err != nil {
		t.Fatal(err)
	}
	live, release, err := LocalFile(ctx, s, "videos/video_1/result.mp4")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if filepath.Dir(left) != tmp || !strings.HasPrefix(filepath.Base(left), ffmpeg.ScratchPrefix) {
		t.Fatalf("local copy %s is not a scratch file in %s", left, tmp)
	}
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	n, err := ffmpeg.Tools{Timeout: time.Minute}.RemoveStaleTemp(os.TempDir(), now)
	if err != nil || n != 1 {
		t.Fatalf("sweep removed %d (%v), want 1", n, err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the 48-hour-old local copy survived the sweep (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a fresh local copy was removed: %v", err)
	}
}
