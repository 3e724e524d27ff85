package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official OpenAI Go SDK, as a real client of a started service with the sandbox engine,
// reads tasks created through the contract's JSON: Get, List with auto-paging over several
// pages, DownloadContent (a 302 to the signed result link, followed by Go's client) giving
// the video, and Delete twice; after the delete the task still reads, without links, and its
// content is a 404.
func TestOpenAISDKReadsListsDownloadsAndDeletesTasks(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
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

	_, err = sdk.Videos.DownloadContent(ctx, ids[0], openai.VideoDownloadContentParams{Variant: openai.VideoDownloadContentParamsVariantThumbnail})
	if status := apiStatus(err); status != http.StatusNotFound {
		t.Fatalf("thumbnail: %v, want 404", err)
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
	if after.Status != openai.VideoStatusCompleted || after.ExpiresAt != 0 || after.JSON.ExtraFields["metadata"].Raw() != "" && after.JSON.ExtraFields["metadata"].Raw() != "null" {
		t.Fatalf("after delete: %s; want completed, no links", after.RawJSON())
	}
	_, err = sdk.Videos.DownloadContent(ctx, ids[0], openai.VideoDownloadContentParams{})
	if status := apiStatus(err); status != http.StatusNotFound {
		t.Fatalf("content after delete: %v, want 404", err)
	}
	// Another key sees none of it.
	other := openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey("sk-not-a-key"), option.WithMaxRetries(0))
	if _, err := other.Videos.Delete(ctx, ids[1]); apiStatus(err) != http.StatusUnauthorized {
		t.Fatalf("delete with an unknown key: %v, want 401", err)
	}
}

func apiStatus(err error) int {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}
