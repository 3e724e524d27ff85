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
	"mediagen/internal/media/budget"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
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
//
// What a request can leave behind is bounded: the request first takes a slot of the media
// budget as the task's tenant (waiting at most the budget's request wait, then refused with
// 503 or 429 and Retry-After), and only then starts the work, which runs under that slot.
// A request dropped while it waits leaves nothing; one dropped after leaves one process
// that holds a slot for at most ThumbnailTimeout, and its thumbnail is there for the next
// request. So at most one is made per task, and no more at once than the budget's slots.
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
	c, err := s.startThumbnail(tenantctx.With(ctx, t.TenantID, t.KeyID), t.ID, r.VideoKey, key)
	if err != nil || c == nil {
		return key, err // c nil: made meanwhile
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

// startThumbnail returns the making of task id's thumbnail in progress, starting it under a
// slot of the media budget when none is; nil when the thumbnail was stored while this
// request waited for its slot.
func (s *Service) startThumbnail(ctx context.Context, id, videoKey, key string) (*thumbCall, error) {
	if c := s.thumbCall(id); c != nil {
		return c, nil
	}
	mctx, release, err := s.Media.Reserve(ctx, budget.WorkThumbnail)
	if err != nil {
		return nil, err
	}
	if _, err := s.Blobs.Stat(ctx, key); err == nil { // another request made it meanwhile
		release()
		return nil, nil
	}
	s.thumbs.mu.Lock()
	if s.thumbs.calls == nil {
		s.thumbs.calls = map[string]*thumbCall{}
	}
	if c, running := s.thumbs.calls[id]; running { // another request started it meanwhile
		s.thumbs.mu.Unlock()
		release()
		return c, nil
	}
	c := &thumbCall{done: make(chan struct{})}
	s.thumbs.calls[id] = c
	s.thumbs.mu.Unlock()
	// Made under its own bound, apart from the request: a client that gives up does not
	// waste the work for the next one.
	go func() {
		defer release()
		timeout := s.ThumbnailTimeout
		if timeout <= 0 {
			timeout = DefaultThumbnailTimeout
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(mctx), timeout)
		defer cancel()
		c.err = s.makeThumbnail(wctx, id, videoKey, key)
		s.thumbs.mu.Lock()
		delete(s.thumbs.calls, id)
		s.thumbs.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

func (s *Service) thumbCall(id string) *thumbCall {
	s.thumbs.mu.Lock()
	defer s.thumbs.mu.Unlock()
	return s.thumbs.calls[id]
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
