package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"mediagen/internal/media/ffmpeg"
)

// Prefixes of the temporary files a render writes before renaming them into place. A render
// killed mid-way (SIGKILL, power loss) leaves them behind; nothing else starts with them.
const (
	recordTempPrefix = ".sandbox-" // writeTemp: spec, started mark, result, status
	fetchTempPrefix  = ".fetch-"   // fetchInput: a source being downloaded
)

// renderLockFile is held (flock) by the process rendering a job, for as long as it renders.
// The kernel drops the lock when that process dies, however it dies, so a process that gets
// the lock knows that no render of the job is running anywhere, and that every temporary
// file in the job directory belongs to a dead attempt.
const renderLockFile = "render.lock"

// removeLeftovers deletes the temporary files a dead render of job id left: ffmpeg's partial
// output and record files in the job directory, partial downloads under inputs/. Complete
// files (the spec, the started mark, fetched inputs) stay: the new render reuses them. The
// caller must hold the job's render lock.
func (e *Engine) removeLeftovers(id string) (int, error) {
	n := 0
	var errs []error
	for _, d := range []struct {
		dir      string
		prefixes []string
	}{
		{e.jobDir(id), []string{ffmpeg.TempPrefix, recordTempPrefix}},
		{filepath.Join(e.jobDir(id), inputsDir), []string{fetchTempPrefix}},
	} {
		entries, err := os.ReadDir(d.dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, en := range entries {
			if !en.Type().IsRegular() || !hasAnyPrefix(en.Name(), d.prefixes) {
				continue
			}
			if err := os.Remove(filepath.Join(d.dir, en.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("remove leftovers of job %s: %w", id, err)
	}
	return n, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
