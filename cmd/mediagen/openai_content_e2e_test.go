//lint:file-ignore SA1019 The SDK marks its video API deprecated (OpenAI shuts Sora down); this test is about what SDK users call against this service.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"mediagen/internal/blob/s3test"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
)

// The official OpenAI Go SDK, as a real client of a started service with the sandbox engine,
// reads tasks created through the contract's JSON: Get, List with auto-paging over several
// pages, DownloadContent (a 302 to the signed result link, followed by Go's client) giving
// the video and, with variant thumbnail, a JPEG of the video's size, and Delete twice; after
// the delete the task still reads, without links, and its content and thumbnail are 404s.
func TestOpenAISDKReadsListsDownloadsAndDeletesTasks(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, e *e2e) {
		ctx := context.Background()
		sdk := openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))

		const n = 3
		ids := make([]string, n)
		for i := range ids {
			ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"sdk %d","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, i))
		}
		for _, id := range ids {
			e.wait(id)
		}

		v, err := sdk.Videos.Get(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if v.ID != ids[0] || v.Status != openai.VideoStatusCompleted || v.Progress != 100 || v.Object != "video" ||
			v.CompletedAt == 0 || v.ExpiresAt <= v.CompletedAt || v.Seconds == "" || v.Size == "" {
			t.Fatalf("Get: %s", v.RawJSON())
		}

		var listed []string
		pager := sdk.Videos.ListAutoPaging(ctx, openai.VideoListParams{Limit: openai.Int(1)})
		for pager.Next() {
			listed = append(listed, pager.Current().ID)
		}
		if err := pager.Err(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(listed) != fmt.Sprint([]string{ids[2], ids[1], ids[0]}) {
			t.Fatalf("ListAutoPaging with limit 1 gave %v, want the %d tasks newest first", listed, n)
		}

		res, err := sdk.Videos.DownloadContent(ctx, ids[0], openai.VideoDownloadContentParams{})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "content.mp4")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, res.Body)
		_ = res.Body.Close()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		info, err := e.tools.Probe(ctx, path)
		if err != nil || info.Width == 0 || info.Duration < 3.5 {
			t.Fatalf("downloaded content: %+v, %v; want the 4 s video", info, err)
		}

		if w, h := thumbnailSize(t, sdk, ids[0]); w != info.Width || h != info.Height {
			t.Fatalf("thumbnail %dx%d, want the video's %dx%d", w, h, info.Width, info.Height)
		}

		var before struct {
			Metadata struct {
				URL string `json:"url"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(v.RawJSON()), &before); err != nil || before.Metadata.URL == "" {
			t.Fatalf("result link before delete: %q, %v", before.Metadata.URL, err)
		}
		for i := range 2 {
			d, err := sdk.Videos.Delete(ctx, ids[0])
			if err != nil {
				t.Fatalf("delete %d: %v", i+1, err)
			}
			if d.ID != ids[0] || !d.Deleted || d.Object != "video.deleted" {
				t.Fatalf("delete %d: %s", i+1, d.RawJSON())
			}
		}
		after, err := sdk.Videos.Get(ctx, ids[0])
		if err != nil {
			t.Fatal(err)
		}
		if after.Status != openai.VideoStatusCompleted || after.ExpiresAt != 0 || after.Seconds != v.Seconds ||
			strings.Contains(after.RawJSON(), `"url"`) || !strings.Contains(after.RawJSON(), `"deleted_at":`) || !strings.Contains(after.RawJSON(), `"usage":`) {
			t.Fatalf("after delete: %s; want completed with deleted_at and usage, no links", after.RawJSON())
		}
		if res, err := http.Get(before.Metadata.URL); err != nil || res.StatusCode != http.StatusNotFound {
			t.Fatalf("result link handed out before the delete: %v %v, want 404", res, err)
		} else {
			_ = res.Body.Close()
		}
		_, err = sdk.Videos.DownloadContent(ctx, ids[0], openai.VideoDownloadContentParams{})
		if status := apiStatus(err); status != http.StatusNotFound {
			t.Fatalf("content after delete: %v, want 404", err)
		}
		_, err = sdk.Videos.DownloadContent(ctx, ids[0], openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
		if status := apiStatus(err); status != http.StatusNotFound {
			t.Fatalf("thumbnail after delete: %v, want 404", err)
		}
		// Another key of the same account sees none of it: the 404 of an unknown id.
		otherKey := (&assetE2E{e2e: e}).newKey("demo", 100*money.Scale)
		other := openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey(otherKey), option.WithMaxRetries(0))
		if _, err := other.Videos.Delete(ctx, ids[1]); apiStatus(err) != http.StatusNotFound {
			t.Fatalf("delete with another key: %v, want 404", err)
		}
		if _, err := other.Videos.DownloadContent(ctx, ids[1], openai.VideoDownloadContentParams{}); apiStatus(err) != http.StatusNotFound {
			t.Fatalf("content with another key: %v, want 404", err)
		}
		if _, err := sdk.Videos.Get(ctx, ids[1]); err != nil {
			t.Fatalf("the owner's task after another key's delete: %v", err)
		}
	})
}

// The refusals of the content and delete routes: an unknown variant names its param, a task
// not finished has no content and cannot be deleted (there is no cancel).
func TestVideoContentAndDeleteRefuseWhatTheyCannotDo(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	done := e.create(`{"model":"demo-video-fast","prompt":"done","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	slow := e.create(`{"model":"demo-video-fast","prompt":"slow [sandbox:slow=60s]","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	e.wait(done)
	for _, tc := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/v1/videos/" + done + "/content?variant=gif", 400, `"param":"variant"`},
		{"GET", "/v1/videos/" + done + "/content?variant=spritesheet", 404, `"code":"spritesheet_not_available"`},
		{"GET", "/v1/videos/" + slow + "/content", 400, `"code":"video_not_completed"`},
		{"DELETE", "/v1/videos/" + slow, 400, `"code":"video_not_completed"`},
		{"GET", "/v1/videos/video_23oceerndxzmmul55kslsvr5nq/content", 404, `"code":"not_found"`},
		{"DELETE", "/v1/videos/video_23oceerndxzmmul55kslsvr5nq", 404, `"code":"not_found"`},
	} {
		status, b := e.call(tc.method, tc.path, "")
		if status != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s; want %d with %s", tc.method, tc.path, status, b, tc.status, tc.want)
		}
	}
	// The redirect itself: a 302 to the signed file link, not followed here.
	req, _ := http.NewRequest("GET", e.baseURL()+"/v1/videos/"+done+"/content", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, e.baseURL()+"/v1/files/") {
		t.Fatalf("content: %d Location %q; want 302 to %s/v1/files/…", res.StatusCode, loc, e.baseURL())
	}
}

func apiStatus(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// thumbnailSize downloads a task's thumbnail with the SDK and decodes it: a JPEG, answered
// as image/jpeg.
func thumbnailSize(t *testing.T, sdk openai.Client, id string) (width, height int) {
	t.Helper()
	res, err := sdk.Videos.DownloadContent(context.Background(), id, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
	if err != nil {
		t.Fatalf("thumbnail: %v", err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "image/jpeg" {
		t.Errorf("thumbnail Content-Type %q, want image/jpeg", ct)
	}
	img, err := jpeg.Decode(res.Body)
	if err != nil {
		t.Fatalf("thumbnail: %v", err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

// With results on S3 the signed link is on the bucket's origin, which OpenAI's Go SDK will not
// follow a redirect to ("request URL origin must match the configured base URL"): the content
// route streams the object from the bucket instead, and the SDK gets the video and its
// thumbnail; after the delete both are 404s.
func TestOpenAISDKDownloadsContentFromS3(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	minio := s3test.Start(t)
	blobURL, creds := minio.URL(t, "mediagen")
	dir := t.TempDir()
	m := NewMain(env(creds), io.Discard, io.Discard)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--sandbox-pace", "200ms",
		"--log-level", "warn", "--blob", blobURL}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, key: m.DemoKey, tools: tools, cat: catalog.Demo()}
	id := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":4,"resolution":"480p"}}`)
	if task := e.wait(id); task.Status != "completed" {
		t.Fatalf("task on S3: %+v", task)
	}
	ctx := context.Background()
	sdk := openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0))
	res, err := sdk.Videos.DownloadContent(ctx, id, openai.VideoDownloadContentParams{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// The SDK refuses a redirect to another origin, so the content is streamed by the API.
	if res.Request.URL.Host == minio.Endpoint || res.StatusCode != http.StatusOK {
		t.Errorf("content: %d from %s; want 200 from the API, not a redirect to the bucket", res.StatusCode, res.Request.URL.Host)
	}
	path := filepath.Join(t.TempDir(), "s3.mp4")
	b, err := io.ReadAll(res.Body)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	info, err := tools.Probe(ctx, path)
	if err != nil || info.Height != 480 {
		t.Fatalf("content from S3: %+v %v (%d bytes: %.200s)", info, err, len(b), b)
	}
	if w, h := thumbnailSize(t, sdk, id); w != info.Width || h != info.Height {
		t.Fatalf("thumbnail from S3 %dx%d, want the video's %dx%d", w, h, info.Width, info.Height)
	}
	if _, err := sdk.Videos.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := sdk.Videos.DownloadContent(ctx, id, openai.VideoDownloadContentParams{}); apiStatus(err) != http.StatusNotFound {
		t.Fatalf("content after delete on S3: %v, want 404", err)
	}
	_, err = sdk.Videos.DownloadContent(ctx, id, openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
	if apiStatus(err) != http.StatusNotFound {
		t.Fatalf("thumbnail after delete on S3: %v, want 404", err)
	}
}
