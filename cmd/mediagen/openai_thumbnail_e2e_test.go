//lint:file-ignore SA1019 the SDK marks its video methods deprecated (OpenAI shuts its own Sora API down); they are exactly what clients of this service call.

package main

import (
	"bytes"
	"context"
	"errors"
	"image/jpeg"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"mediagen/internal/blob"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
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
	oldTask(t, e, id)

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
		if res := e.result(id); s != [2]int{res.Width, res.Height} {
			t.Errorf("late thumbnail %dx%d, want the video's %dx%d", s[0], s[1], e.result(id).Width, e.result(id).Height)
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

// oldTask makes completed task id one of before thumbnails: no thumbnail_key in its result,
// no stored thumbnail.
func oldTask(t *testing.T, e *e2e, id string) {
	t.Helper()
	ctx := context.Background()
	res := e.result(id)
	if res.ThumbnailKey == "" {
		t.Fatalf("result %+v has no thumbnail to remove", res)
	}
	res.ThumbnailKey = ""
	doc, _ := json.Marshal(res)
	if err := e.m.db.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, id, doc) }); err != nil {
		t.Fatal(err)
	}
	if err := e.m.blobs.Delete(ctx, video.ThumbnailKey(id)); err != nil {
		t.Fatal(err)
	}
}

// result is the stored result of completed task id.
func (e *e2e) result(id string) video.Result {
	e.t.Helper()
	var res video.Result
	if err := json.Unmarshal(e.task(id).Result, &res); err != nil {
		e.t.Fatalf("result of %s: %v", id, err)
	}
	return res
}

// A late thumbnail is made under the process's media budget (--media-slots): with its one
// slot held by other work past the request's bounded wait, the request is answered 503
// server_busy with Retry-After and nothing starts; once the slot is free, the same request
// gets its thumbnail (its 302 followed to the JPEG), made by an ffmpeg the budget counted.
func TestLateThumbnailIsRefusedWithRetryAfterWhileTheMediaBudgetIsFull(t *testing.T) {
	t.Parallel()
	e := startE2E(t, "--media-slots", "1")
	id := e.create(`{"model":"demo-video-fast","prompt":"a busy kite","metadata":{"duration":4,"resolution":"480p"}}`)
	if task := e.wait(id); task.Status != "completed" {
		t.Fatalf("task: %+v", task)
	}
	oldTask(t, e, id)
	before := sumSeries(e.metrics(), "mediagen_media_processes_total", `tool="ffmpeg"`)
	hold, err := e.m.media.Acquire(tenantctx.With(context.Background(), "other", "key_other"), "ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	path := "/v1/videos/" + id + "/content?variant=thumbnail"
	status, body := e.call("GET", path, "") // checked against docs/openapi.yaml, Retry-After included
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), `"code":"server_busy"`) {
		t.Fatalf("thumbnail with the media budget full: %d %s, want 503 server_busy", status, body)
	}
	if _, err := e.m.blobs.Stat(context.Background(), video.ThumbnailKey(id)); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a refused request made the thumbnail: %v", err)
	}
	hold()
	if status, body := e.call("GET", path, ""); status != http.StatusOK || !bytes.HasPrefix(body, []byte("\xff\xd8")) {
		t.Fatalf("thumbnail with a free slot: %d (%d bytes), want 200 and a JPEG (the 302 followed)", status, len(body))
	}
	m := e.metrics()
	if got := sumSeries(m, "mediagen_media_refused_total", `reason="busy",work="thumbnail"`); got != 1 {
		t.Errorf("refusals counted %v, want 1:\n%s", got, grepLines(m, "mediagen_media_refused_total"))
	}
	if got := sumSeries(m, "mediagen_media_processes_total", `tool="ffmpeg"`); got <= before {
		t.Errorf("ffmpeg processes counted %v before and %v after the thumbnail, want more", before, got)
	}
	if !strings.Contains(m, "mediagen_media_slots 1\n") {
		t.Errorf("no mediagen_media_slots 1:\n%s", grepLines(m, "mediagen_media_slots"))
	}
}
