package blob

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/minio/minio-go/v7"
)

// ErrUnreachable marks a store that did not answer (refused or timed-out connections, a
// server error, a server still starting): trying again later may work. Every other failure
// of NewS3 is an answer that will not change by itself — a missing bucket, unknown
// credentials, another region — so its message says what to fix instead.
var ErrUnreachable = errors.New("store unreachable")

// expectingRegion finds the region a server names in its "the region is wrong" answer
// (MinIO: "…the region is wrong; expecting 'eu-west-1'.").
var expectingRegion = regexp.MustCompile(`expecting ['‘]([^'’]+)['’]`)

// bucketError says why the first request to the bucket failed, and what to do about it.
func bucketError(cfg S3Config, err error) error {
	where := fmt.Sprintf("bucket %s at %s", cfg.Bucket, cfg.Endpoint)
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return fmt.Errorf("blob: %s: the store speaks plain HTTP: add secure=false to the s3:// URL of --blob: %w", where, err)
	}
	er := minio.ToErrorResponse(err)
	if er.StatusCode == 0 || er.StatusCode >= 500 {
		// No HTTP answer at all (connection refused, DNS, timeout), or the server failed.
		return fmt.Errorf("blob: %s: %w (is the endpoint in --blob right, and is the store up?): %w", where, ErrUnreachable, err)
	}
	if region := wrongRegion(cfg, er); region != "" {
		return fmt.Errorf("blob: %s is in region %s, not %s: set region=%s in the s3:// URL of --blob: %w", where, region, cfg.Region, region, err)
	}
	switch er.Code {
	case "InvalidAccessKeyId":
		return fmt.Errorf("blob: %s: the store does not know the access key %q: check AWS_ACCESS_KEY_ID (and AWS_SECRET_ACCESS_KEY): %w", where, cfg.AccessKey, err)
	case "SignatureDoesNotMatch":
		return fmt.Errorf("blob: %s: the store refused the secret of access key %q: check AWS_SECRET_ACCESS_KEY: %w", where, cfg.AccessKey, err)
	case minio.AccessDenied:
		return fmt.Errorf("blob: %s: access denied to key %q: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and that the key may list, read, write and delete objects of the bucket (s3:ListBucket, s3:GetObject, s3:PutObject, s3:DeleteObject): %w", where, cfg.AccessKey, err)
	}
	if er.StatusCode == http.StatusMovedPermanently || er.StatusCode == http.StatusTemporaryRedirect {
		return fmt.Errorf("blob: %s: the store sends requests elsewhere (another region or endpoint): check endpoint= and region= in --blob: %w", where, err)
	}
	return fmt.Errorf("blob: %s: %w", where, err)
}

// wrongRegion is the bucket's region when the answer says the request named another one, or
// "" when it does not.
func wrongRegion(cfg S3Config, er minio.ErrorResponse) string {
	switch {
	case er.Code == minio.AuthorizationHeaderMalformed || er.Code == minio.InvalidRegion:
		if m := expectingRegion.FindStringSubmatch(er.Message); m != nil {
			return m[1]
		}
		if er.Region != "" {
			return er.Region
		}
		return "another region"
	case er.Region != "" && er.Region != cfg.Region && er.StatusCode != http.StatusOK:
		// AWS names the bucket's region in x-amz-bucket-region when it refuses or redirects.
		return er.Region
	}
	return ""
}

// missingBucket is the answer to a bucket that does not exist.
func missingBucket(cfg S3Config) error {
	return fmt.Errorf("blob: bucket %s does not exist at %s: create it with `mediagen admin blob init` (given the same --blob and AWS_* variables as serve), or correct the bucket name in --blob",
		cfg.Bucket, cfg.Endpoint)
}
