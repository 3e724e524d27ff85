package vertex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// DefaultStorageURL is Cloud Storage's JSON API root, where a video Veo wrote to the
// account's bucket (the storageUri parameter) is read:
// GET {root}/storage/v1/b/{bucket}/o/{object}?alt=media
// (https://cloud.google.com/storage/docs/json_api/v1/objects/get), with the account's token
// (its cloud-platform scope covers Cloud Storage).
const DefaultStorageURL = "https://storage.googleapis.com"

// ParseGCSURI splits gs://bucket/object. A bucket as Cloud Storage names them (3–222
// characters of lower-case letters, digits, '-', '_' and '.'); the object may be empty (a
// prefix).
func ParseGCSURI(uri string) (bucket, object string, ok bool) {
	rest, ok := strings.CutPrefix(uri, "gs://")
	if !ok {
		return "", "", false
	}
	bucket, object, _ = strings.Cut(rest, "/")
	if len(bucket) < 3 || len(bucket) > 222 || strings.Trim(bucket, "abcdefghijklmnopqrstuvwxyz0123456789-_.") != "" ||
		strings.ContainsAny(object, "\r\n#?") {
		return "", "", false
	}
	return bucket, object, true
}

// gcsVideo is the reader of a video Veo wrote under the account's storageUri. Only objects
// under that prefix are read: the token is never spent on a bucket the operator did not name.
func (c *Client) gcsVideo(uri string) (func(ctx context.Context) (io.ReadCloser, error), error) {
	bucket, object, ok := ParseGCSURI(uri)
	if !ok || c.storage == nil || !strings.HasPrefix(uri, c.storageURI) || object == "" || strings.Contains(object, "..") {
		return nil, fmt.Errorf("vertex: the video %q is not under the account's storage_uri", uri)
	}
	path := "/storage/v1/b/" + url.PathEscape(bucket) + "/o/" + url.PathEscape(object) + "?alt=media"
	return func(ctx context.Context) (io.ReadCloser, error) {
		r := rest.Request{Method: http.MethodGet, Path: path, Accept: "*/*"}
		res, err := c.storage.Do(ctx, r)
		var se *rest.StatusError
		if errors.As(err, &se) && se.Status == http.StatusUnauthorized {
			c.tokens.drop()
			res, err = c.storage.Do(ctx, r)
		}
		if err != nil {
			// A refused read or a missing object is retried until the deadline: the job is
			// done and paid, and the operator can fix the bucket's permissions meanwhile.
			return nil, fmt.Errorf("vertex: reading the video from Cloud Storage: %w: %w", err, provider.ErrTransient)
		}
		return res.Body, nil
	}, nil
}
