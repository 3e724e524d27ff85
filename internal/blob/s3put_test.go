package blob_test

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"mediagen/internal/blob"
	"mediagen/internal/blob/s3test"
)

// A small body sent slowly must not hold a whole part buffer while it arrives: the client
// library allocates twice the part size up front for a body of unknown length, which a paced
// upload of a few KiB then held for up to 15 minutes (issue 41). Not parallel: MemStats
// counts the whole process.
func TestS3PutOfASmallBodyAllocatesInProportionToIt(t *testing.T) {
	minio := s3test.Start(t)
	cfg := minio.Config(t, "mediagen")
	cfg.PartMB = 0 // the default part size (16 MiB), as a deployment runs
	s, err := blob.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 10
	const budget = 2 << 20 // far below one 16 MiB part, far above a 64 KiB body and the client's own bookkeeping (0.5 MB)
	ctx := context.Background()
	body := bytes.Repeat([]byte("mediagen"), size/8)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n, err := s.Put(ctx, "uploads/u_small.png", iotest.HalfReader(bytes.NewReader(body)))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if n != size {
		t.Fatalf("Put wrote %d bytes, want %d", n, size)
	}
	t.Logf("Put of %d bytes: %d bytes allocated", size, after.TotalAlloc-before.TotalAlloc)
	if d := after.TotalAlloc - before.TotalAlloc; d > budget {
		t.Errorf("Put of %d bytes allocated %d bytes in total; want < %d (no whole part buffer)", size, d, budget)
	}
	o, err := s.Open(ctx, "uploads/u_small.png")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	got, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Fatal("stored bytes differ from the body")
	}
}
