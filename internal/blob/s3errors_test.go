package blob_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/blob/s3test"
)

// A store that answers with a refusal — no such bucket, an unknown key, a wrong secret, another
// region, plain HTTP spoken to an https URL — will refuse the same way a second later: NewS3
// says what to fix and is not ErrUnreachable, so serve stops at once. Only a store that does
// not answer is ErrUnreachable.
func TestNewS3SaysWhatToFixAndWaitsOnlyForAnUnreachableStore(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	eu := s3test.StartInRegion(t, "eu-west-1")
	good := srv.Config(t, "")
	for _, tc := range []struct {
		name        string
		cfg         func() blob.S3Config
		unreachable bool
		want        []string
	}{
		{"a bucket that does not exist", func() blob.S3Config { c := good; c.Bucket = "no-such-bucket"; return c }, false,
			[]string{"bucket no-such-bucket does not exist at " + srv.Endpoint, "mediagen admin blob init"}},
		{"an access key the store does not know", func() blob.S3Config { c := good; c.AccessKey = "nobody"; return c }, false,
			[]string{`access key "nobody"`, "AWS_ACCESS_KEY_ID"}},
		{"a wrong secret", func() blob.S3Config { c := good; c.SecretKey = "wrong-secret"; return c }, false,
			[]string{"AWS_SECRET_ACCESS_KEY"}},
		{"a bucket in another region", func() blob.S3Config { c := eu.Config(t, ""); c.Region = "us-east-1"; return c }, false,
			[]string{"is in region eu-west-1, not us-east-1", "region=eu-west-1"}},
		{"https spoken to a plain HTTP store", func() blob.S3Config { c := good; c.Secure = true; return c }, false,
			[]string{"secure=false"}},
		{"a port nothing listens on", func() blob.S3Config { c := good; c.Endpoint = "127.0.0.1:1"; return c }, true,
			[]string{"127.0.0.1:1", "is the store up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// minio-go retries an unanswered request for about 10 s; the bound keeps the
			// unreachable case short, and ends the same way (no answer).
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			_, err := blob.NewS3(ctx, tc.cfg())
			if err == nil {
				t.Fatal("opened")
			}
			if got := errors.Is(err, blob.ErrUnreachable); got != tc.unreachable {
				t.Errorf("ErrUnreachable = %v, want %v: %v", got, tc.unreachable, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestInitS3CreatesAMissingBucketOnceAndChecksItCanWrite(t *testing.T) {
	t.Parallel()
	srv := s3test.Start(t)
	cfg := srv.Config(t, "p")
	cfg.Bucket = "made-by-init"
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		created, err := blob.InitS3(ctx, cfg)
		if err != nil {
			t.Fatalf("init %d: %v", i+1, err)
		}
		if created != want {
			t.Errorf("init %d: created = %v, want %v", i+1, created, want)
		}
	}
	s, err := blob.NewS3(ctx, cfg)
	if err != nil {
		t.Fatalf("NewS3 after init: %v", err)
	}
	n := 0
	if err := s.List(ctx, "", func(blob.Info) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("init left %d objects in the bucket", n)
	}
	bad := cfg
	bad.SecretKey = "wrong-secret"
	if _, err := blob.InitS3(ctx, bad); err == nil || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("init with a wrong secret: %v; want the fix named", err)
	}
}
