package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob/s3test"
	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
)

// With --blob on an S3 bucket (a real MinIO), results, last frames, production
// intermediates and speech audio live in the bucket: the links clients get are presigned
// straight at the store, so no result byte passes through the service, and nothing is kept
// on the machine's disk.
func TestResultsOnS3AreServedStraightFromTheStore(t *testing.T) {
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

	onStore := func(what, link string) {
		t.Helper()
		u, err := url.Parse(link)
		if err != nil || u.Host != minio.Endpoint || !strings.Contains(u.RawQuery, "X-Amz-Signature=") {
			t.Errorf("%s link %s: want a presigned link at %s", what, link, minio.Endpoint)
		}
	}
	native := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":4,"resolution":"480p","return_last_frame":true}}`)
	production := e.create(`{"model":"demo-production-lite","prompt":"a harbour","metadata":{"duration":4,"resolution":"1080p"}}`)
	task := e.wait(native)
	if task.Status != "completed" {
		t.Fatalf("native on S3: %+v %+v", task, task.Error)
	}
	onStore("result", task.Metadata.URL)
	onStore("last frame", task.Metadata.LastFrameURL)
	if _, info := e.download(task.Metadata.URL, "native.mp4"); info.Height != 480 {
		t.Errorf("native result %+v", info)
	}
	ptask := e.wait(production)
	if ptask.Status != "completed" {
		t.Fatalf("production on S3 (its enhancement reads the intermediate from the bucket): %+v %+v", ptask, ptask.Error)
	}
	onStore("production", ptask.Metadata.URL)
	if _, info := e.download(ptask.Metadata.URL, "production.mp4"); info.Height != 1080 {
		t.Errorf("production result %+v", info)
	}
	s := e.speech(`{"model":"demo-speech","input":"Stored in the bucket."}`)
	onStore("speech", s.URL)
	res, err := http.Get(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || len(b) == 0 || res.Header.Get("Content-Type") != "audio/mpeg" {
		t.Errorf("speech download: %d, %d bytes, %s", res.StatusCode, len(b), res.Header.Get("Content-Type"))
	}

	// The service serves no result file itself, and kept none on its disk.
	own := e.baseURL() + "/v1/files/videos/" + native + "/result.mp4?expires=9999999999&sig=00"
	if res, err := http.Get(own); err != nil || res.StatusCode != http.StatusNotFound {
		t.Errorf("the service's own file route for a result: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && (strings.HasSuffix(p, "result.mp4") || strings.HasSuffix(p, "audio.mp3")) && strings.Contains(p, "blobs") {
			t.Errorf("a result on the local disk: %s", p)
		}
		return nil
	})
}

// With --blob on S3, asset copies are stored in the bucket too: their links are presigned at
// the store, the sandbox engine reads them by key (a task on any replica can use them), the
// results' retention sweep never deletes them, and deleting an asset deletes its objects.
func TestAssetsOnS3LiveInTheBucketAndFeedTasks(t *testing.T) {
	t.Parallel()
	minio := s3test.Start(t)
	blobURL, creds := minio.URL(t, "assets")
	e := startAssetE2E(t, creds, "--blob", blobURL)

	img := e.register(e.key, grantedGroup, e.writeMedia("frame.png", pngOf(t, 96, 64)), "Image")
	vid := e.register(e.key, grantedGroup, e.input, "Video")
	a := e.poll(e.key, img)
	if a["Status"] != "Active" {
		t.Fatalf("image on S3: %v", a)
	}
	if v := e.poll(e.key, vid); v["Status"] != "Active" {
		t.Fatalf("video on S3: %v", v)
	}
	link, _ := a["URL"].(string)
	if u, err := url.Parse(link); err != nil || u.Host != minio.Endpoint {
		t.Fatalf("asset link %q: want one presigned at %s", link, minio.Endpoint)
	}
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(b, pngOf(t, 96, 64)) {
		t.Fatalf("asset download: %d, %d bytes", res.StatusCode, len(b))
	}

	native := e.create(`{"model":"demo-video-2.5","prompt":"@Image1 comes alive","metadata":{"resolution":"480p","duration":4,"ratio":"adaptive","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"asset://` + img + `"}}]}}`)
	prod := e.create(`{"model":"demo-production-lite","prompt":"extend @Video1","metadata":{"resolution":"1080p","duration":4,"omni_reference_task_type":"extend","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"asset://` + vid + `"}}]}}`)
	for _, id := range []string{native, prod} {
		if task := e.wait(id); task.Status != "completed" {
			t.Fatalf("task with an asset on S3: %+v %+v", task, task.Error)
		}
	}

	// Everything is older than a nanosecond: the sweep deletes results, never asset copies.
	sw, _ := e.m.retentionSweeper(time.Nanosecond)
	if n, err := sw.SweepOnce(context.Background(), time.Now().Add(time.Second)); err != nil || n == 0 {
		t.Fatalf("sweep: %d deleted, %v", n, err)
	}
	if res, err := http.Get(link); err != nil || res.StatusCode != 200 {
		t.Fatalf("the retention sweep deleted an asset copy: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if task := e.wait(native); task.Metadata.URL != "" {
		if res, err := http.Get(task.Metadata.URL); err == nil {
			res.Body.Close()
			if res.StatusCode != 404 {
				t.Errorf("a swept result still downloads: %d", res.StatusCode)
			}
		}
	}

	e.post(e.key, "/v1/vidgen/virtual/assets/delete", `{"Id":"`+img+`"}`, 200)
	var deleted int
	if !testkit.PollEvery(100*time.Millisecond, 30*time.Second, func() bool {
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		deleted = res.StatusCode
		return deleted == 404
	}) {
		t.Fatalf("the deleted asset's object is still in the bucket: %d", deleted)
	}
	_ = filepath.Walk(e.m.Config.DataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.Contains(p, string(filepath.Separator)+"assets"+string(filepath.Separator)) {
			t.Errorf("an asset copy on the local disk: %s", p)
		}
		return nil
	})
}

// A worker with a remote upstream account needs --public-url on its own disk (the upstream
// fetches asset links from the service), but not with a bucket: every link it hands out is
// presigned at the store.
func TestRemoteUpstreamOnS3NeedsNoPublicURL(t *testing.T) {
	t.Parallel()
	minio := s3test.Start(t)
	blobURL, vars := minio.URL(t, "public")
	vars["ARK_TEST_KEY"] = arkTestKey
	catPath := arkCatalog(t, t.TempDir(), "https://ark.invalid/api/v3")
	m := NewMain(env(vars), io.Discard, io.Discard)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--catalog", catPath, "--blob", blobURL, "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	_ = m.Close()
	if err != nil {
		t.Fatalf("serve with an ark account and results on S3, no --public-url: %v", err)
	}
}
