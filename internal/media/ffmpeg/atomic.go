package ffmpeg

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary output file. A process that takes over the
// work of one that died can recognise (and remove) what the dead one left by it.
const TempPrefix = ".mediagen-"

// errEmptyOutput means a tool exited cleanly but wrote nothing, which would
// otherwise publish an empty file.
var errEmptyOutput = errors.New("tool produced an empty file")

// writeAtomic lets produce write a temporary file next to out, then fsyncs it
// and renames it to out. The temporary name is ours, not derived from out,
// so a "%d" or a "file:" in the caller's name can never reach a muxer that
// interprets it; it keeps out's extension for tools that look at it.
func writeAtomic(out string, produce func(tmp string) error) (err error) {
	dir := filepath.Dir(out)
	f, err := os.CreateTemp(dir, TempPrefix+"*.tmp"+filepath.Ext(out))
	if err != nil {
		return fmt.Errorf("create temporary output: %w", err)
	}
	tmp := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("create temporary output: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()

	if err := produce(tmp); err != nil {
		return err
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("publish output: %w", err)
	}
	// The rename is only durable once the directory entry is on disk too.
	// Failing here would leave a complete file at out, so it is not an error.
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("sync output: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("sync output: %w", err)
	}
	if st.Size() == 0 {
		return errEmptyOutput
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync output: %w", err)
	}
	return f.Close()
}
