package blob_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"mediagen/internal/blob"
	"mediagen/internal/blob/s3test"
	"mediagen/internal/testkit"
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
	// MinIO answers a HEAD of a just-removed bucket from its bucket-metadata cache for a
	// while on a busy machine (5 s was too short in CI on 2026-11-26, 30 s on 2026-11-29): what
	// is under test is that Ping says what the store says, so the test first waits, bounded at
	// 90 s, until MinIO itself answers that the bucket is gone, then asks Ping once.
	testkit.WaitEvery(t, 50*time.Millisecond, 90*time.Second, "MinIO kept answering that the removed bucket exists",
		func() bool {
			ok, err := admin.BucketExists(context.Background(), cfg.Bucket)
			return err == nil && !ok
		})
	if err := s.Ping(context.Background()); err == nil {
		t.Fatal("ping succeeded after the store answered that the bucket is gone")
	}
}
