package blob

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Pinger is a store that can say whether it is reachable now, for the mediagen_blob_up
// gauge: a store that cannot be reached fails every result write and download.
type Pinger interface {
	Ping(ctx context.Context) error
}

var (
	_ Pinger = (*FS)(nil)
	_ Pinger = (*S3)(nil)
)

// Ping reports whether the root is still a directory (a disk unmounted or a root removed
// under the process is not).
func (s *FS) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Stat(s.root)
	if err != nil {
		return fmt.Errorf("blob: root: %w", err)
	}
	if !fi.IsDir() {
		return errors.New("blob: root is not a directory")
	}
	return nil
}

// Ping reports whether the bucket answers and exists, with the store's credentials.
func (s *S3) Ping(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("blob: S3 bucket %s: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("blob: S3 bucket %s does not exist", s.bucket)
	}
	return nil
}
