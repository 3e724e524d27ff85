package blob_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/blob/blobtest"
	"mediagen/internal/blob/s3test"
)

func get(url string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return http.DefaultClient.Do(req)
}

// The filesystem store, its links served by its own ServeFile.
func TestConformanceFS(t *testing.T) {
	t.Parallel()
	blobtest.Run(t, func(t *testing.T) blobtest.Harness {
		var fs *blob.FS
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := fs.ServeFile(w, r); err != nil {
				w.WriteHeader(http.StatusForbidden)
			}
		}))
		t.Cleanup(srv.Close)
		var err error
		if fs, err = blob.NewFS(t.TempDir(), bytes.Repeat([]byte{7}, 32), srv.URL); err != nil {
			t.Fatal(err)
		}
		return blobtest.Harness{Store: fs, Get: get, Sweeper: func(r time.Duration) *blob.Sweeper { return &blob.Sweeper{Store: fs, Retention: r} }}
	})
}

// The S3 store on a real MinIO server, its links presigned straight at MinIO.
func TestConformanceS3(t *testing.T) {
	t.Parallel()
	minio := s3test.Start(t)
	blobtest.Run(t, func(t *testing.T) blobtest.Harness {
		s, err := blob.NewS3(context.Background(), minio.Config(t, "mediagen"))
		if err != nil {
			t.Fatal(err)
		}
		return blobtest.Harness{Store: s, Get: get, Sweeper: func(r time.Duration) *blob.Sweeper { return &blob.Sweeper{Objects: s, Retention: r} }}
	})
}
