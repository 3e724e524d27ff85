package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/mediakit"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/video"
)

// stageSource is the mediakit kind's mediakit.Stage: AI MediaKit fetches a video_url itself,
// so a standalone enhancement's source is read here once more, measured, refused when it
// plays longer than the task was priced for (provider.EnhanceRequest.MaxSourceSeconds), and
// stored with the task (videos/<task>/mediakit-source.<ext>); the vendor is given a signed
// link to that copy, never the tenant's URL, which could serve something else by then.
func (f frameFitter) stageSource(ctx context.Context, key string, src provider.Source, maxSeconds float64) (string, error) {
	task, _, _ := strings.Cut(key, ":")
	if task == "" || strings.ContainsAny(task, "/\\.") {
		return "", fmt.Errorf("stage: idempotency key %q names no task", key)
	}
	base := video.KeyPrefix + task + "/mediakit-source"
	// A create made again (its answer lost) reuses the copy staged for the first: it passed
	// the measure when it was stored, and the job the first create made reads that copy, so a
	// source that changed since cannot fail a task whose job exists.
	for _, ext := range []string{".mp4", ".mov"} {
		if _, err := f.blobs.Stat(ctx, base+ext); err == nil {
			return f.link(base + ext)
		}
	}
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"stage-*") // swept at start if a crash leaves it
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	in := src.Path
	if in == "" {
		in = filepath.Join(dir, "source")
		if err := f.fetchSource(ctx, src.URL, in); err != nil {
			return "", err
		}
	}
	info, err := f.tools.Probe(ctx, in)
	if err != nil {
		return "", &provider.Error{Code: "InvalidParameter", Message: "The source video cannot be used: it is not a readable video.", Kind: provider.ErrPermanent}
	}
	if maxSeconds > 0 && info.Length() > maxSeconds {
		return "", &provider.Error{Code: mediakit.CodeSourceChanged, Kind: provider.ErrPermanent, Message: fmt.Sprintf(
			"The source video measures %.3f s now, longer than the %.3f s it measured when the task was accepted; a source must not change after submission. Nothing was charged.",
			info.Length(), maxSeconds)}
	}
	ext := ".mp4"
	if info.Container == "mov" {
		ext = ".mov"
	}
	obj := base + ext
	if src.Path != "" { // PutFile moves its file: a caller's local copy stays where it is
		fh, err := os.Open(src.Path)
		if err != nil {
			return "", err
		}
		defer fh.Close()
		_, err = f.blobs.Put(ctx, obj, fh)
		if err != nil {
			return "", fmt.Errorf("stage: store the source: %w", err)
		}
	} else if _, err := f.blobs.PutFile(ctx, obj, in); err != nil {
		return "", fmt.Errorf("stage: store the source: %w", err)
	}
	return f.link(obj)
}

// link is a signed link to a staged source, valid --link-ttl.
func (f frameFitter) link(obj string) (string, error) {
	ttl := f.linkTTL
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	link, _ := f.blobs.SignedURL(obj, ttl)
	if link == "" {
		return "", errors.New("stage: the store gives no link to the source (a worker with a mediakit account needs --public-url)")
	}
	return link, nil
}

// fetchSource reads a source through the fetch policy into path, at most the engines' bound.
func (f frameFitter) fetchSource(ctx context.Context, url, path string) error {
	// The contract allows a plain-http enhancement source (HTTPS recommended), as the local
	// engines fetch it.
	res, err := f.fetch.Get(ctx, url, safefetch.RequestOptions{AllowHTTP: true, MaxBytes: sandbox.DefaultMaxFetchBytes})
	if err != nil {
		if safefetch.Refused(err) {
			// The same on every try: the task fails, refunded, rather than waiting out its deadline.
			return &provider.Error{Code: "InvalidParameter", Message: "The source video's URL is not allowed.", Kind: provider.ErrPermanent}
		}
		return fmt.Errorf("stage: fetch the source: %w: %w", err, provider.ErrTransient)
	}
	defer res.Body.Close()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, provider.Capped(res.Body, sandbox.DefaultMaxFetchBytes)); err != nil {
		out.Close()
		return fmt.Errorf("stage: fetch the source: %w: %w", err, provider.ErrTransient)
	}
	return out.Close()
}
