package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"mediagen/internal/blob"
)

// adminBlobCommands are the operator commands about the S3 store: `blob init` makes the
// bucket serve needs with the service's own S3 client, so a deployment needs no other tool.
func adminBlobCommands() []adminCmd {
	return []adminCmd{
		{path: "blob init", nodb: true, flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			blobURL := fs.String("blob", "", "the s3:// URL serve is given (default: $MEDIAGEN_BLOB); the credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
			return func(e *adminEnv, args []string) error {
				if len(args) != 0 {
					return usageError{"blob init: takes no arguments"}
				}
				if *blobURL == "" {
					*blobURL = e.getenv(envName("blob"))
				}
				return e.blobInit(context.Background(), *blobURL)
			}
		}},
	}
}

// blobInit creates the bucket of an s3:// URL when it is missing and checks that the
// credentials can write to it.
func (e *adminEnv) blobInit(ctx context.Context, blobURL string) error {
	if !strings.HasPrefix(blobURL, "s3://") {
		return usageError{"blob init: give --blob s3://BUCKET[/PREFIX]?endpoint=HOST:PORT (or MEDIAGEN_BLOB); a data directory's store needs no setup"}
	}
	cfg, err := blob.ParseS3URL(blobURL, e.getenv)
	if err != nil {
		return usageError{err.Error()}
	}
	created, err := blob.InitS3(ctx, cfg)
	if err != nil {
		return fmt.Errorf("blob init: %w", err)
	}
	state := "exists"
	if created {
		state = "created"
	}
	fmt.Fprintf(e.stdout, "bucket %s %s at %s; access key %s can write to it\n", cfg.Bucket, state, cfg.Endpoint, cfg.AccessKey)
	return nil
}
