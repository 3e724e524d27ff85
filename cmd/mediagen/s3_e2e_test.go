package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/blob/s3test"
	"mediagen/internal/catalog"
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
