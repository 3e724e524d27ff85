package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
)

// fetchOpts says how one source may be fetched.
type fetchOpts struct {
	allowHTTP bool  // standalone enhancement sources may be http
	maxBytes  int64 // byte cap for this source
	what      string
}

// obtain returns a local file holding src: its Path when that file exists (a local copy
// the caller made), otherwise the URL downloaded through the safe fetch client into the job's
// inputs directory as name. A download finished by an earlier process is reused.
func (e *Engine) obtain(ctx context.Context, id, name string, src provider.Source, o fetchOpts) (string, error) {
	if src.Path != "" {
		st, err := os.Stat(src.Path)
		if err == nil && st.Mode().IsRegular() {
			return src.Path, nil
		}
		// The local copy may be gone (a resumed job after a restart); the URL, when
		// there is one, is still the source of truth.
		if src.URL == "" || e.cfg.Fetch == nil {
			return "", failJob(fmt.Sprintf("The %s could not be read.", o.what), err)
		}
	}
	if src.Key != "" && e.cfg.OpenKey != nil {
		// An object of the service's own store (an S3 bucket of the cluster): read with
		// the store's credentials, not fetched through the public-address policy.
		return e.obtainKey(ctx, id, name, src.Key, o)
	}
	if src.URL == "" {
		return "", failJob(fmt.Sprintf("The %s has no source.", o.what), nil)
	}
	if e.cfg.Fetch == nil {
		return "", failJob(fmt.Sprintf("The %s could not be fetched.", o.what), errors.New("no fetch client configured"))
	}
	dir := filepath.Join(e.jobDir(id), inputsDir)
	dest := filepath.Join(dir, name)
	if fileExists(dest) {
		return dest, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	resp, err := e.cfg.Fetch.Get(ctx, src.URL, safefetch.RequestOptions{AllowHTTP: o.allowHTTP, MaxBytes: o.maxBytes})
	if err != nil {
		return "", e.fetchError(ctx, o.what, err)
	}
	defer resp.Body.Close()
	return dest, e.save(ctx, dir, dest, resp.Body, o)
}

// obtainKey copies an object of the service's store into the job's inputs directory.
func (e *Engine) obtainKey(ctx context.Context, id, name, key string, o fetchOpts) (string, error) {
	dir := filepath.Join(e.jobDir(id), inputsDir)
	dest := filepath.Join(dir, name)
	if fileExists(dest) {
		return dest, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	rc, err := e.cfg.OpenKey(ctx, key)
	if err != nil {
		return "", fmt.Errorf("read the %s from the store: %w", o.what, err)
	}
	defer rc.Close()
	return dest, e.save(ctx, dir, dest, rc, o)
}

// save writes r into dest atomically (a temporary file renamed).
func (e *Engine) save(ctx context.Context, dir, dest string, r io.Reader, o fetchOpts) error {
	f, err := os.CreateTemp(dir, fetchTempPrefix+"*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dest)
	}
	if err != nil {
		os.Remove(tmp)
		return e.fetchError(ctx, o.what, err)
	}
	return nil
}

// check confirms that a reference the sandbox does not use (videos, audio) is
// reachable, as a real upstream would when it downloads it. It asks for the first
// bytes only; a server that ignores Range and announces a body over the cap still
// counts as reachable.
func (e *Engine) check(ctx context.Context, src provider.Source, what string) error {
	if src.Path != "" {
		return nil
	}
	if src.Key != "" && e.cfg.OpenKey != nil {
		// An object of the service's own store: opening it is the reachability check.
		rc, err := e.cfg.OpenKey(ctx, src.Key)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("read %s: %w", what, ctx.Err())
			}
			return failJob(fmt.Sprintf("The %s could not be read.", what), err)
		}
		return rc.Close()
	}
	if src.URL == "" || e.cfg.Fetch == nil {
		return nil
	}
	const probeBytes = 64 << 10
	resp, err := e.cfg.Fetch.Get(ctx, src.URL, safefetch.RequestOptions{
		MaxBytes: probeBytes,
		Header:   http.Header{"Range": {fmt.Sprintf("bytes=0-%d", probeBytes-1)}},
	})
	if errors.Is(err, safefetch.ErrTooLarge) {
		return nil
	}
	if err != nil {
		return e.fetchError(ctx, what, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil && !errors.Is(err, safefetch.ErrTooLarge) {
		return e.fetchError(ctx, what, err)
	}
	return nil
}

// fetchError turns a fetch failure into a job failure with safefetch's public sentence,
// unless the engine is shutting down (then the render is simply interrupted).
func (e *Engine) fetchError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("fetch %s: %w", what, ctx.Err())
	}
	return failJob(fmt.Sprintf("The %s could not be fetched: %s", what, safefetch.PublicMessage(err)), err)
}
