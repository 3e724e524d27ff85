package video

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/store"
)

// DefaultThumbnailTimeout bounds making one late thumbnail, copying a remote video to a
// scratch file included.
const DefaultThumbnailTimeout = 30 * time.Second

// ThumbnailKey is where a task's thumbnail is stored: beside its video, the key the
// pipeline uses at completion and a late thumbnail uses too.
func ThumbnailKey(taskID string) string { return KeyPrefix + taskID + "/thumbnail.jpg" }

// thumbnails makes the thumbnail of a task completed before thumbnails were made, once per
// task at a time: concurrent requests for one task wait for the one that makes it.
type thumbnails struct {
	mu    sync.Mutex
	calls map[string]*thumbCall
}

type thumbCall struct {
	done chan struct{}
	err  error
}

// lateThumbnail returns the key of task t's thumbnail, making it from the stored video when
// the task completed before thumbnails were made (r.ThumbnailKey is empty). It is stored at
// ThumbnailKey, which Delete removes with the video; the task's result is not rewritten.
func (s *Service) lateThumbnail(ctx context.Context, t store.Task, r Result) (string, error) {
	notAvailable := &apierr.Error{Kind: apierr.KindNotFound, Code: "thumbnail_not_available",
		Message: "thumbnail not available: no thumbnail could be made for this video. Use variant=video."}
	if s.FirstFrame == nil || s.Blobs == nil || r.VideoKey == "" {
		return "", notAvailable
	}
	key := ThumbnailKey(t.ID)
	if _, err := s.Blobs.Stat(ctx, key); err == nil {
		return key, nil
	}
	s.thumbs.mu.Lock()
	if s.thumbs.calls == nil {
		s.thumbs.calls = map[string]*thumbCall{}
	}
	c, running := s.thumbs.calls[t.ID]
	if !running {
		c = &thumbCall{done: make(chan struct{})}
		s.thumbs.calls[t.ID] = c
	}
	s.thumbs.mu.Unlock()
	if !running {
		// Made under its own bound, apart from the request: a client that gives up does not
		// waste the work for the next one.
		go func() {
			timeout := s.ThumbnailTimeout
			if timeout <= 0 {
				timeout = DefaultThumbnailTimeout
			}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			defer cancel()
			c.err = s.makeThumbnail(wctx, t.ID, r.VideoKey, key)
			s.thumbs.mu.Lock()
			delete(s.thumbs.calls, t.ID)
			s.thumbs.mu.Unlock()
			close(c.done)
		}()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if c.err != nil {
		if errors.Is(c.err, errResultDeleted) {
			return "", resultDeleted()
		}
		return "", fmt.Errorf("thumbnail of %s: %w: %w", t.ID, notAvailable, c.err)
	}
	return key, nil
}

var errResultDeleted = errors.New("result deleted")

func (s *Service) makeThumbnail(ctx context.Context, taskID, videoKey, key string) error {
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"frame-*") // swept at start if a crash leaves it
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path, local := s.Blobs.LocalPath(videoKey)
	if !local {
		path = filepath.Join(dir, "video.mp4")
		if err := s.copyBlob(ctx, videoKey, path); err != nil {
			return err
		}
	}
	jpg := filepath.Join(dir, "thumbnail.jpg")
	if err := s.FirstFrame(ctx, path, jpg); err != nil {
		return err
	}
	if _, err := s.Blobs.PutFile(ctx, key, jpg); err != nil {
		return err
	}
	// A DELETE that ran meanwhile may have removed the files before this one was stored.
	if t, err := s.Store.Task(ctx, taskID); err == nil {
		if r, err := completedResult(t); err == nil && r.DeletedAt != 0 {
			_ = s.Blobs.Delete(context.WithoutCancel(ctx), key)
			return errResultDeleted
		}
	}
	return nil
}

func (s *Service) copyBlob(ctx context.Context, key, path string) error {
	obj, err := s.Blobs.Open(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("video %s is missing", key)
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, obj)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
