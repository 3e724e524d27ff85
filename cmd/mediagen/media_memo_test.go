package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"mediagen/internal/media/ffmpeg"
)

// probeMemo is ffprobe's reading of files by their bytes, for the tests that measure the
// same few fixture clips over and over (an honest upstream's tokens, a stored result that is
// the fixture it came from): each distinct content is probed once per test binary. Every
// reading is still ffprobe's reading of exactly those bytes.
var probeMemo struct {
	mu    sync.Mutex
	infos map[[sha256.Size]byte]ffmpeg.Info
}

// probeBytes is tools.Probe of path, remembered by the file's content.
func probeBytes(ctx context.Context, tools ffmpeg.Tools, path string) (ffmpeg.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return ffmpeg.Info{}, err
	}
	h := sha256.New()
	_, err = io.Copy(h, f)
	f.Close()
	if err != nil {
		return ffmpeg.Info{}, fmt.Errorf("hash %s: %w", path, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	probeMemo.mu.Lock()
	info, ok := probeMemo.infos[sum]
	probeMemo.mu.Unlock()
	if ok {
		return info, nil
	}
	info, err = tools.Probe(ctx, path)
	if err != nil {
		return ffmpeg.Info{}, err
	}
	probeMemo.mu.Lock()
	if probeMemo.infos == nil {
		probeMemo.infos = map[[sha256.Size]byte]ffmpeg.Info{}
	}
	probeMemo.infos[sum] = info
	probeMemo.mu.Unlock()
	return info, nil
}

// copyFile copies src to dst (a new file).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// sharedClips are the fixture clips rendered in this test binary, under one directory that
// TestMain removes: the SQLite and PostgreSQL runs of the billing property draw from the same
// few lengths and frame rates.
var sharedClips struct {
	mu      sync.Mutex
	dir     string
	pending map[string]*sync.Mutex
}

// sharedClip renders spec as name once per test binary and returns its path.
func sharedClip(tools ffmpeg.Tools, name string, spec ffmpeg.RenderSpec) (string, error) {
	sharedClips.mu.Lock()
	if sharedClips.dir == "" {
		dir, err := os.MkdirTemp("", "mediagen-test-clips-")
		if err != nil {
			sharedClips.mu.Unlock()
			return "", err
		}
		sharedClips.dir, sharedClips.pending = dir, map[string]*sync.Mutex{}
	}
	one, ok := sharedClips.pending[name]
	if !ok {
		one = &sync.Mutex{}
		sharedClips.pending[name] = one
	}
	p := filepath.Join(sharedClips.dir, name)
	sharedClips.mu.Unlock()
	one.Lock() // one render per name; others wait for it
	defer one.Unlock()
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return p, tools.Render(context.Background(), spec, p)
}

// removeSharedClips removes what sharedClip rendered (TestMain, after the tests).
func removeSharedClips() {
	sharedClips.mu.Lock()
	defer sharedClips.mu.Unlock()
	if sharedClips.dir != "" {
		_ = os.RemoveAll(sharedClips.dir)
	}
}
