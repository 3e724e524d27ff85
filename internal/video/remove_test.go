package video

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/store"
)

func (t *fakeTx) ReplaceTaskResult(_ context.Context, id string, result []byte) error {
	task, ok := t.f.tasks[id]
	if !ok || task.Status != store.StatusCompleted {
		return store.ErrNotFound
	}
	task.Result = result
	t.staged = append(t.staged, func() { t.f.tasks[id] = task })
	return nil
}

// failingDeletes is a blob store whose first Delete fails.
type failingDeletes struct {
	blob.Store
	calls atomic.Int32
}

func (f *failingDeletes) Delete(ctx context.Context, key string) error {
	if f.calls.Add(1) == 1 {
		return errors.New("disk gone")
	}
	return f.Store.Delete(ctx, key)
}

// A delete marks the result deleted in the store before it removes the files, so a removal
// that fails leaves a task that is never linked again, and the next delete (answered the
// same) removes the files, the thumbnail with them. Another key's delete is the 404 of an unknown task and changes
// nothing; a task not finished is refused.
func TestDeleteMarksTheResultBeforeRemovingItsFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fs, err := blob.NewFS(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"), "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"videos/video_a/result.mp4", "videos/video_a/thumbnail.jpg", "videos/video_a/last_frame.jpg"} {
		if _, err := fs.Put(ctx, k, strings.NewReader("bytes")); err != nil {
			t.Fatal(err)
		}
	}
	blobs := &failingDeletes{Store: fs}
	st := newFakeStore("key_1", 0)
	st.tasks["video_a"] = store.Task{ID: "video_a", KeyID: "key_1", Route: "native", Status: store.StatusCompleted, Progress: 100,
		Result: []byte(`{"video_key":"videos/video_a/result.mp4","thumbnail_key":"videos/video_a/thumbnail.jpg","last_frame_key":"videos/video_a/last_frame.jpg","duration":4,"fps":24,"width":854,"height":480}`)}
	st.tasks["video_q"] = store.Task{ID: "video_q", KeyID: "key_1", Route: "native", Status: store.StatusQueued}
	s := &Service{Store: st, Blobs: blobs, Now: func() time.Time { return time.Unix(1795643190, 0) }}
	owner := demoCaller(t)
	other := owner
	other.Key = store.Key{ID: "key_2", TenantID: owner.Key.TenantID}

	if k, err := s.ContentKey(ctx, owner, "video_a", VariantThumbnail); err != nil || k != "videos/video_a/thumbnail.jpg" {
		t.Fatalf("thumbnail before delete: %q, %v", k, err)
	}
	if err := s.Delete(ctx, other, "video_a"); !isKind(err, 404) {
		t.Fatalf("another key's delete: %v, want 404", err)
	}
	if got := View(st.tasks["video_a"], expiringLinker{}); got.DeletedAt != 0 {
		t.Fatalf("another key's delete marked the task: %+v", got)
	}
	if err := s.Delete(ctx, owner, "video_a"); err == nil {
		t.Fatal("first delete with a failing file store: no error")
	}
	v := View(st.tasks["video_a"], expiringLinker{})
	if v.DeletedAt != 1795643190 || v.Metadata != nil {
		t.Fatalf("after a delete whose file removal failed: %+v; want deleted_at and no links", v)
	}
	if err := s.Delete(ctx, owner, "video_a"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	for _, k := range []string{"videos/video_a/result.mp4", "videos/video_a/thumbnail.jpg", "videos/video_a/last_frame.jpg"} {
		if _, err := fs.Stat(ctx, k); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s after the second delete: %v, want gone", k, err)
		}
	}
	if _, err := s.ContentKey(ctx, owner, "video_a", ""); !isKind(err, 404) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("content after delete: %v, want 404 deleted", err)
	}
	if _, err := s.ContentKey(ctx, owner, "video_a", VariantThumbnail); !isKind(err, 404) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("thumbnail after delete: %v, want 404 deleted", err)
	}
	if err := s.Delete(ctx, owner, "video_q"); !isKind(err, 400) {
		t.Fatalf("delete of a queued task: %v, want 400", err)
	}
}

// isKind reports whether err is a client error answered with status.
func isKind(err error, status int) bool {
	var e *apierr.Error
	return errors.As(err, &e) && e.Status() == status
}
