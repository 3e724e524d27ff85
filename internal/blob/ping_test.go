package blob_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"mediagen/internal/blob"
	"mediagen/internal/blob/s3test"
)

func TestFSPingFailsOnceTheRootIsGone(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	fs, err := blob.NewFS(root, bytes.Repeat([]byte{7}, 32), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Ping(context.Background()); err != nil {
		t.Fatalf("ping of a fresh store: %v", err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := fs.Ping(context.Background()); err == nil {
		t.Fatal("ping succeeded without a root")
	}
}

func TestS3PingFailsOnceTheBucketIsGone(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	cfg := srv.Config(t, "")
	s, err := blob.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("ping of a live bucket: %v", err)
	}
	admin, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""), Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.RemoveBucket(context.Background(), cfg.Bucket); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err == nil {
		t.Fatal("ping succeeded without the bucket")
	}
}
