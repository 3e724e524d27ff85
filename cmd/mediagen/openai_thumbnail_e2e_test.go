//lint:file-ignore SA1019 the SDK marks its video methods deprecated (OpenAI shuts its own Sora API down); they are exactly what clients of this service call.

package main

import (
	"context"
	"errors"
	"image/jpeg"
	"net/http"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"mediagen/internal/blob"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// A task completed before thumbnails were made (its result names no thumbnail and none is
// stored) gets one on its first variant=thumbnail: made once from the stored video, even for
// concurrent requests, stored beside the video and served as a JPEG of the video's size;
// DELETE removes it with the video, and the thumbnail is then the 404 of a deleted result.
func TestOpenAIThumbnailIsMadeLateForOldTasks(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	// Not recorded: the content route's 302 and the file link it leads to are not API operations.
	sdk := openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
	ctx := context.Background()
	id := e.create(`{"model":"demo-video-fast","prompt":"an old kite","metadata":{"duration":4,"resolution":"480p"}}`)
	if task := e.wait(id); task.Status != "completed" {
		t.Fatalf("task: %+v", task)
	}
	// Make it a task of before thumbnails: no thumbnail_key, no stored thumbnail.
	var res video.Result
	if err := json.Unmarshal(e.task(id).Result, &res); err != nil || res.ThumbnailKey == "" {
		t.Fatalf("result %+v %v", res, err)
	}
	res.ThumbnailKey = ""
	doc, _ := json.Marshal(res)
	if err := e.m.db.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, id, doc) }); err != nil {
		t.Fatal(err)
	}
	if err := e.m.blobs.Delete(ctx, video.ThumbnailKey(id)); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	sizes := make(chan [2]int, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := sdk.Videos.DownloadContent(ctx, id, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
			if err != nil {
				errs <- err
				return
			}
			defer r.Body.Close()
			if ct := r.Header.Get("Content-Type"); ct != "image/jpeg" {
				errs <- errors.New("Content-Type " + ct)
				return
			}
			img, err := jpeg.Decode(r.Body)
			if err != nil {
				errs <- err
				return
			}
			sizes <- [2]int{img.Bounds().Dx(), img.Bounds().Dy()}
		}()
	}
	wg.Wait()
	close(errs)
	close(sizes)
	for err := range errs {
		t.Errorf("late thumbnail: %v", err)
	}
	for s := range sizes {
		if s != [2]int{res.Width, res.Height} {
			t.Errorf("late thumbnail %dx%d, want the video's %dx%d", s[0], s[1], res.Width, res.Height)
		}
	}
	if _, err := e.m.blobs.Stat(ctx, video.ThumbnailKey(id)); err != nil {
		t.Fatalf("late thumbnail not stored: %v", err)
	}

	if _, err := sdk.Videos.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.blobs.Stat(ctx, video.ThumbnailKey(id)); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("late thumbnail after delete: %v, want it removed", err)
	}
	_, err := sdk.Videos.DownloadContent(ctx, id, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
	if apiStatus(err) != http.StatusNotFound {
		t.Fatalf("thumbnail after delete: %v, want 404", err)
	}
}
