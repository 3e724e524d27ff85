package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/mediakit"
)

// The stage of a mediakit account's standalone source reads the tenant's URL (plain http
// allowed, as for the local engines), measures it and stores it with the task, handing back a
// signed link to the stored copy; a source longer than the reservation covers is refused
// for good (InvalidParameter.SourceChanged) and one the fetch policy forbids too, so neither
// reaches the vendor.
func TestMediaKitStageStoresTheMeasuredSourceAndRefusesAChangedOne(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	for name, d := range map[string]float64{"short.mp4": 2, "long.mp4": 6} {
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 64, Height: 36, FPS: 12, Duration: d, Container: "mp4"}, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	media := httptest.NewServer(http.FileServer(http.Dir(dir))) // plain http, as the contract allows
	t.Cleanup(media.Close)
	store, err := blob.NewFS(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"), "https://mediagen.example.com")
	if err != nil {
		t.Fatal(err)
	}
	ff := frameFitter{tools: tools, fetch: safefetch.New(safefetch.Options{AllowLoopback: true}), blobs: store, linkTTL: time.Hour}

	link, err := ff.stageSource(context.Background(), "video_stage1:enh", provider.Source{URL: media.URL + "/short.mp4"}, 2.5)
	if err != nil {
		t.Fatal(err)
	}
	info, err := store.Stat(context.Background(), "videos/video_stage1/mediakit-source.mp4")
	if err != nil || info.Size == 0 || !strings.HasPrefix(link, "https://mediagen.example.com/") || strings.Contains(link, media.URL) {
		t.Errorf("staged %+v %v behind %q; want the stored copy's signed link", info, err, link)
	}

	// A create made again (its answer lost) reuses the stored copy: the source may have
	// changed since, the job the first create made reads the copy.
	again, err := ff.stageSource(context.Background(), "video_stage1:enh", provider.Source{URL: media.URL + "/long.mp4"}, 2.5)
	if err != nil || again == "" {
		t.Errorf("staging again: %q %v; want the stored copy's link", again, err)
	}
	if info2, _ := store.Stat(context.Background(), "videos/video_stage1/mediakit-source.mp4"); info2.Size != info.Size {
		t.Errorf("staging again replaced the copy: %d bytes, was %d", info2.Size, info.Size)
	}

	for _, tc := range []struct {
		name, url, code string
	}{
		{"a source longer than the reservation", media.URL + "/long.mp4", mediakit.CodeSourceChanged},
		{"a source the fetch policy forbids", "http://10.0.0.1/clip.mp4", "InvalidParameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ff.stageSource(context.Background(), "video_stage2:enh", provider.Source{URL: tc.url}, 2.5)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Code != tc.code || !errors.Is(err, provider.ErrPermanent) {
				t.Errorf("stage: %v; want a permanent %s", err, tc.code)
			}
		})
	}
	if _, err := store.Stat(context.Background(), "videos/video_stage2/mediakit-source.mp4"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("a refused source was stored: %v", err)
	}
}
