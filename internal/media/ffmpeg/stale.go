package ffmpeg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ScratchPrefix starts the name of every scratch directory the tools make in os.TempDir
// (caption text, intermediate WAV, last-frame JPEG); callers making their own scratch
// directories or files for tool input or output use it too (blob.LocalFile's copy of an
// object-store result is a file), so RemoveStaleTemp finds them.
const ScratchPrefix = "mediagen-scratch-"

// minStale is the least age at which a temporary file or scratch directory is taken for a
// dead process's: far beyond any bounded run, so that a live process's files never match.
const minStale = time.Hour

// RemoveStaleTemp removes, directly inside dir, the temporary outputs (TempPrefix) and
// scratch directories and files (ScratchPrefix) last modified before now minus the larger of one hour
// and twice Tools.Timeout. A live run removes its own when it ends, however it ends, and no
// run outlives Tools.Timeout; what is older was left by a process killed mid-run (SIGKILL,
// power loss), which no deferred cleanup survived. It is safe beside live processes that
// share dir. A missing dir is not an error.
func (t Tools) RemoveStaleTemp(dir string, now time.Time) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("remove stale temporary files: %w", err)
	}
	cutoff := now.Add(-max(minStale, 2*t.timeout()))
	n := 0
	var errs []error
	for _, e := range entries {
		name := e.Name()
		// Symbolic links and other special files are never ours, whatever their name.
		ours := (strings.HasPrefix(name, TempPrefix) && e.Type().IsRegular()) ||
			(strings.HasPrefix(name, ScratchPrefix) && (e.IsDir() || e.Type().IsRegular()))
		if !ours {
			continue
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue // gone meanwhile, or possibly a live run's
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("remove stale temporary files: %w", err)
	}
	return n, nil
}
