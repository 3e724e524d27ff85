package video

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// Content variants of GET /v1/videos/{id}/content (OpenAI's names).
const (
	VariantVideo     = "video"
	VariantThumbnail = "thumbnail"
	// VariantSpritesheet is OpenAI's third variant; not made here.
	VariantSpritesheet = "spritesheet"
)

// ContentKey finds the stored file behind GET /v1/videos/{id}/content for the owning key:
// the result video's blob key. A task of another key or an unknown id is the same 404 as
// Get; a task not completed, a deleted result and a spritesheet (the service makes none) are
// refusals that say so. A task completed before thumbnails were made gets its thumbnail made
// on the first variant=thumbnail.
func (s *Service) ContentKey(ctx context.Context, c keys.Caller, id, variant string) (string, error) {
	switch variant {
	case "", VariantVideo, VariantThumbnail, VariantSpritesheet:
	default:
		return "", apierr.Invalid("variant", fmt.Sprintf("Unknown variant %q: use video, thumbnail or spritesheet.", variant))
	}
	t, err := s.Get(ctx, c, id)
	if err != nil {
		return "", err
	}
	r, err := completedResult(t)
	if err != nil {
		return "", err
	}
	if r.DeletedAt != 0 {
		return "", resultDeleted()
	}
	switch {
	case variant == VariantThumbnail && r.ThumbnailKey != "":
		return r.ThumbnailKey, nil
	case variant == VariantThumbnail:
		// Completed before thumbnails were made: made now, once, from the stored video.
		return s.lateThumbnail(ctx, t, r)
	case variant == VariantSpritesheet:
		return "", &apierr.Error{Kind: apierr.KindNotFound, Code: "spritesheet_not_available",
			Message: "spritesheet not available: this service stores no spritesheet of a video. Use variant=video."}
	}
	return r.VideoKey, nil
}

// Delete removes a completed task's stored files (the video, its thumbnail and any last frame) for the
// owning key. The task and its ledger stay; the result is first marked deleted in the
// database, so no replica links the files again, then the files go. A second delete answers
// the same and retries the file removal. A task not finished is refused: the service has no
// cancel. A failed or expired task has no files and is deleted trivially.
func (s *Service) Delete(ctx context.Context, c keys.Caller, id string) error {
	t, err := s.Get(ctx, c, id)
	if err != nil {
		return err
	}
	if t.Status == store.StatusFailed || t.Status == store.StatusExpired {
		return nil
	}
	r, err := completedResult(t)
	if err != nil {
		return err
	}
	if r.DeletedAt == 0 {
		r.DeletedAt = s.now().Unix()
		doc, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
		err = s.Store.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, id, doc) })
		if err != nil {
			return fmt.Errorf("delete %s: %w", id, err)
		}
	}
	if s.Blobs == nil {
		return nil
	}
	// ThumbnailKey(id): where a thumbnail made after completion is (lateThumbnail).
	for _, k := range []string{r.VideoKey, r.ThumbnailKey, r.LastFrameKey, ThumbnailKey(id)} {
		if k == "" {
			continue
		}
		if err := s.Blobs.Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return fmt.Errorf("delete %s: file: %w", id, err)
		}
	}
	return nil
}

// completedResult is a task's result, or the refusal for a task that has none yet.
func completedResult(t store.Task) (Result, error) {
	var r Result
	if t.Status != store.StatusCompleted {
		return r, &apierr.Error{Kind: apierr.KindInvalid, Code: "video_not_completed",
			Message: fmt.Sprintf("The video task is %s, not completed: it has no content yet. Poll GET /v1/videos/{id} until it is completed.", t.Status)}
	}
	if err := json.Unmarshal(t.Result, &r); err != nil {
		return r, fmt.Errorf("task %s: result: %w", t.ID, err)
	}
	return r, nil
}

func resultDeleted() error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: "video_deleted",
		Message: "deleted: the content of this video task was deleted (DELETE /v1/videos/{id})."}
}
