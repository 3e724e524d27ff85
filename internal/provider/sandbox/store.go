package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/provider"
)

// On-disk layout under Config.Dir:
//
//	jobs/<id>/spec.json    the accepted job, written once at submit (create-if-absent)
//	jobs/<id>/started      present once a render has begun (keeps "running" across restarts)
//	jobs/<id>/render.lock  flock-ed by the process rendering the job, for as long as it renders
//	jobs/<id>/inputs/      fetched sources, removed when the job ends
//	jobs/<id>/out.<ext>    the output, written atomically by the ffmpeg helpers
//	jobs/<id>/result.json  written after the output was probed: the success record
//	jobs/<id>/status.json  a terminal failure of the render
//	speech/<id>.mp3        synthesized speech
//	attempts/<id>          how many [sandbox:transient=N] failures were already returned

const (
	specFile    = "spec.json"
	startedMark = "started"
	resultFile  = "result.json"
	statusFile  = "status.json"
	inputsDir   = "inputs"
)

// jobSpec is everything a render needs, so that a later process can redo it.
type jobSpec struct {
	Kind      string        `json:"kind"`
	ID        string        `json:"id"`
	CreatedAt time.Time     `json:"created_at"`
	Pace      time.Duration `json:"pace"` // effective minimum wall time: max(Config.Pace, slow marker)
	Markers   markers       `json:"markers"`
	// Outcome is the terminal state forced by a marker; no render runs for such a job.
	Outcome *outcome `json:"outcome,omitempty"`

	Generate *provider.GenerateRequest `json:"generate,omitempty"`
	Caption  string                    `json:"caption,omitempty"`  // generation: drawn text
	Format   string                    `json:"format,omitempty"`   // generation: mp4 or mov
	Duration int                       `json:"duration,omitempty"` // generation: seconds rendered

	Enhance   *provider.EnhanceRequest `json:"enhance,omitempty"`
	SourceURL string                   `json:"source_url,omitempty"` // enhancement: URL without ?sandbox=
	ShortSide int                      `json:"short_side,omitempty"` // enhancement: target short side
}

// owner is whose task the job is for, for the render slots' fair share ("" for a job whose
// request did not say).
func (s *jobSpec) owner() (tenant, key string) {
	switch {
	case s.Generate != nil:
		return s.Generate.Tenant, s.Generate.Key
	case s.Enhance != nil:
		return s.Enhance.Tenant, s.Enhance.Key
	}
	return "", ""
}

// outcome is a terminal failure or expiry.
type outcome struct {
	Status  provider.Status `json:"status"` // failed or expired
	Code    string          `json:"code"`
	Message string          `json:"message"`
}

// result is the success record, written after the output file.
type result struct {
	File             string  `json:"file"` // base name inside the job directory
	ContentType      string  `json:"content_type"`
	CompletionTokens int64   `json:"completion_tokens,omitempty"`
	Width            int     `json:"width"`
	Height           int     `json:"height"`
	FPS              float64 `json:"fps"`
	Duration         float64 `json:"duration"`
}

func (e *Engine) jobDir(id string) string { return filepath.Join(e.jobsDir, id) }

func (e *Engine) jobFile(id, name string) string { return filepath.Join(e.jobsDir, id, name) }

// writeFileAtomic writes data to a temporary file next to path, syncs it and renames it
// over path, so a reader (or the next process) sees the old file or the new one.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// createFileExclusive publishes data at path only when path does not exist yet. It
// reports false when another writer (another process sharing Dir) got there first.
func createFileExclusive(path string, data []byte) (bool, error) {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case err == nil:
		syncDir(filepath.Dir(path))
		return true, nil
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	// Filesystems without hard links: check, then rename (not atomic against
	// another process, but still never a half-written file).
	if _, serr := os.Stat(path); serr == nil {
		return false, nil
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, err
	}
	syncDir(filepath.Dir(path))
	return true, nil
}

func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), recordTempPrefix+"*.tmp")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

func writeJSONAtomic(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// readJSON reads path into v; a missing file is reported with fs.ErrNotExist.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Base(path), err)
	}
	return nil
}

func readCount(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return n
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Size() > 0
}
