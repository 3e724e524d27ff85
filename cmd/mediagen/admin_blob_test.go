package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob/s3test"
)

// A bucket that does not exist is not an outage: serve stops at once, however long --db-wait
// is, naming the command that makes it; `mediagen admin blob init` makes it (once), and serve
// then starts.
func TestServeStopsAtOnceOnAMissingBucketThatBlobInitMakes(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	blobURL := "s3://made-by-init/?endpoint=" + srv.Endpoint + "&secure=false"
	vars := env(map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey})
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--blob", blobURL, "--db-wait", "1h"}

	m := NewMain(vars, io.Discard, io.Discard)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	// The bound only keeps a regression from hanging the suite for the hour of --db-wait.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := m.Run(ctx)
	_ = m.Close()
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "bucket made-by-init does not exist") || !strings.Contains(err.Error(), "mediagen admin blob init") {
		t.Fatalf("serve: %v (waiting: %v); want it to stop at once saying the bucket does not exist and how to make it", err, ctx.Err())
	}

	for _, want := range []string{"bucket made-by-init created at " + srv.Endpoint, "bucket made-by-init exists at " + srv.Endpoint} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"admin", "blob", "init", "--blob", blobURL}, vars, &stdout, &stderr); err != nil {
			t.Fatalf("admin blob init: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("admin blob init printed %q, want %q", stdout.String(), want)
		}
	}

	m = NewMain(vars, io.Discard, io.Discard)
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--blob", blobURL}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatalf("serve after blob init: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	waitReady(t, m.URL())
}
