package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 is a Store on an S3-compatible object store (AWS S3, MinIO, …), for deployments of
// several machines: every replica reads and writes the same bucket, and result links are
// presigned GETs straight at the store, so result bytes never pass through the API
// processes. It uses minio-go (github.com/minio/minio-go/v7): one small dependency that
// streams unknown-length uploads in fixed-size parts and presigns offline, where the AWS SDK
// would bring a dozen modules for the same two calls.
//
// Atomicity is S3's own: an object appears only when its PUT (or its multipart upload)
// completes, so a reader never sees a partial object, and a failed upload leaves none.
type S3 struct {
	client  *minio.Client // API calls
	presign *minio.Client // link minting: the public endpoint (no network: the region is set)
	bucket  string
	prefix  string // "" or "dir/"
	partMB  uint64
}

// S3Config configures an S3 store.
type S3Config struct {
	// Endpoint is host[:port] of the S3 API; Secure chooses https.
	Endpoint string
	Secure   bool
	// PublicEndpoint is where clients reach the store, for presigned links (default:
	// Endpoint); PublicSecure its scheme.
	PublicEndpoint string
	PublicSecure   bool
	Region         string // default us-east-1
	Bucket         string
	Prefix         string // key prefix inside the bucket; "" or a path
	AccessKey      string
	SecretKey      string
	// PartMB is the size of an upload part, in MiB, and so the memory one upload holds
	// (default 16; S3 allows at most 10,000 parts: 160 GiB at 16 MiB).
	PartMB uint64
	// Transport is the HTTP transport (default: http.DefaultTransport's clone).
	Transport http.RoundTripper
}

// ParseS3URL reads MEDIAGEN_BLOB's s3://bucket/prefix?endpoint=host:port&region=…&secure=…
// &public_endpoint=…&part_mb=… form. Credentials come from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), never from the URL.
func ParseS3URL(raw string, getenv func(string) string) (S3Config, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" || u.User != nil {
		return S3Config{}, errors.New("blob: the S3 URL must be s3://bucket[/prefix]?endpoint=host:port (credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
	}
	q := u.Query()
	cfg := S3Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"), Endpoint: q.Get("endpoint"), Region: q.Get("region"),
		Secure: q.Get("secure") != "false", PublicEndpoint: q.Get("public_endpoint"),
		AccessKey: getenv("AWS_ACCESS_KEY_ID"), SecretKey: getenv("AWS_SECRET_ACCESS_KEY")}
	cfg.PublicSecure = cfg.Secure
	if v := q.Get("public_secure"); v != "" {
		cfg.PublicSecure = v != "false"
	}
	if v := q.Get("part_mb"); v != "" {
		if _, err := fmt.Sscan(v, &cfg.PartMB); err != nil || cfg.PartMB < 5 || cfg.PartMB > 5120 {
			return S3Config{}, errors.New("blob: part_mb must be 5 to 5120 (S3's part sizes)")
		}
	}
	for k := range q {
		switch k {
		case "endpoint", "region", "secure", "public_endpoint", "public_secure", "part_mb":
		default:
			return S3Config{}, fmt.Errorf("blob: unknown S3 URL parameter %q", k)
		}
	}
	if cfg.Endpoint == "" {
		return S3Config{}, errors.New("blob: the S3 URL needs endpoint=host[:port] (s3.amazonaws.com for AWS)")
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return S3Config{}, errors.New("blob: S3 credentials missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	return cfg, nil
}

// NewS3 returns a store on the bucket, which must exist. A failure says what to fix (the
// bucket, the credentials, the region); one wrapping ErrUnreachable is worth trying again.
func NewS3(ctx context.Context, cfg S3Config) (*S3, error) {
	s, cfg, err := dialS3(cfg)
	if err != nil {
		return nil, err
	}
	ok, err := s.client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, bucketError(cfg, err)
	}
	if !ok {
		return nil, missingBucket(cfg)
	}
	return s, nil
}

// InitS3 creates the bucket when it does not exist (created reports whether it did), then
// writes and deletes one object under the prefix, so that a key without the rights serve
// needs is found now rather than at the first result.
func InitS3(ctx context.Context, cfg S3Config) (created bool, err error) {
	s, cfg, err := dialS3(cfg)
	if err != nil {
		return false, err
	}
	ok, err := s.client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return false, bucketError(cfg, err)
	}
	if !ok {
		if err := s.client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			return false, bucketError(cfg, err)
		}
		created = true
	}
	const probe = "mediagen-init-check"
	if _, err := s.Put(ctx, probe, strings.NewReader("ok")); err != nil {
		return created, fmt.Errorf("blob: bucket %s: write a test object: %w", cfg.Bucket, err)
	}
	if err := s.Delete(ctx, probe); err != nil {
		return created, fmt.Errorf("blob: bucket %s: delete the test object: %w", cfg.Bucket, err)
	}
	return created, nil
}

// dialS3 makes the clients of cfg (with its defaults filled in) without a request.
func dialS3(cfg S3Config) (*S3, S3Config, error) {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.PartMB == 0 {
		cfg.PartMB = 16
	}
	if cfg.Prefix != "" {
		if err := ValidateKey(cfg.Prefix); err != nil {
			return nil, cfg, fmt.Errorf("blob: S3 prefix: %w", err)
		}
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	creds := credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	client, err := minio.New(cfg.Endpoint, &minio.Options{Creds: creds, Secure: cfg.Secure, Region: cfg.Region, Transport: tr})
	if err != nil {
		return nil, cfg, fmt.Errorf("blob: S3 client: %w", err)
	}
	presign := client
	if cfg.PublicEndpoint != "" {
		if presign, err = minio.New(cfg.PublicEndpoint, &minio.Options{Creds: creds, Secure: cfg.PublicSecure, Region: cfg.Region, Transport: tr}); err != nil {
			return nil, cfg, fmt.Errorf("blob: S3 public endpoint: %w", err)
		}
	}
	s := &S3{client: client, presign: presign, bucket: cfg.Bucket, partMB: cfg.PartMB}
	if cfg.Prefix != "" {
		s.prefix = cfg.Prefix + "/"
	}
	return s, cfg, nil
}

func (s *S3) name(key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put implements Store: the first part is read as it arrives; a body that ends within it is
// sent as one object of known size, a longer one as an upload of unknown length in parts of
// PartMB, so memory stays flat whatever the size.
//
// Why not hand r to the client straight away: with an unknown length the client allocates a
// whole part buffer (twice PartMB, 31 MiB of heap with the default 16) before the first byte,
// and keeps it for as long as the body takes. A tenant's upload read at the paced minimum
// rate (1.6 KiB/s, netlimit.DefaultBodyReadStall) may take 15 minutes, so a few dozen slow
// uploads of a few KiB each held a gigabyte. Read into a growing buffer first, what a Put
// holds is at most twice what the client has sent, until it has sent a whole part.
func (s *S3) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	name, err := s.name(key)
	if err != nil {
		return 0, err
	}
	opts := minio.PutObjectOptions{ContentType: ContentType(key), PartSize: s.partMB << 20}
	var head bytes.Buffer
	n, err := io.CopyN(&head, r, int64(opts.PartSize))
	var info minio.UploadInfo
	switch {
	case errors.Is(err, io.EOF): // the whole body fits in one part
		info, err = s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(head.Bytes()), n, opts)
	case err != nil:
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	default:
		info, err = s.client.PutObject(ctx, s.bucket, name, io.MultiReader(&head, r), -1, opts)
	}
	if err != nil {
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	return info.Size, nil
}

// PutFile implements Store: the file is uploaded with its known size, then removed.
func (s *S3) PutFile(ctx context.Context, key, path string) (int64, error) {
	name, err := s.name(key)
	if err != nil {
		return 0, err
	}
	info, err := s.client.FPutObject(ctx, s.bucket, name, path, minio.PutObjectOptions{ContentType: ContentType(key), PartSize: s.partMB << 20})
	if err != nil {
		return 0, fmt.Errorf("blob: put %s: %w", key, err)
	}
	if err := os.Remove(path); err != nil {
		return info.Size, fmt.Errorf("blob: put %s: remove the local file: %w", key, err)
	}
	return info.Size, nil
}

// Open implements Store. The object is read with ranged GETs as it is read and sought.
func (s *S3) Open(ctx context.Context, key string) (Object, error) {
	name, err := s.name(key)
	if err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.mapErr(key, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, s.mapErr(key, err)
	}
	return &s3Object{Object: obj, info: s.info(key, st)}, nil
}

type s3Object struct {
	*minio.Object
	info Info
}

func (o *s3Object) Info() Info { return o.info }

func (s *S3) info(key string, st minio.ObjectInfo) Info {
	return Info{Key: key, Size: st.Size, ModTime: st.LastModified, ContentType: ContentType(key)}
}

// Stat implements Store.
func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	name, err := s.name(key)
	if err != nil {
		return Info{}, err
	}
	st, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.mapErr(key, err)
	}
	return s.info(key, st), nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.name(key)
	if err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil && !errors.Is(s.mapErr(key, err), ErrNotFound) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// DeletePrefix implements Store: the objects under prefix are listed and removed in
// batches.
func (s *S3) DeletePrefix(ctx context.Context, prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if err := ValidateKey(p); err != nil {
		return err
	}
	objects := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + p + "/", Recursive: true})
	for e := range s.client.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if e.Err != nil {
			return fmt.Errorf("blob: delete %s: %w", e.ObjectName, e.Err)
		}
	}
	return nil
}

// List calls fn with every object under prefix ("" for all), in key order.
func (s *S3) List(ctx context.Context, prefix string, fn func(Info) error) error {
	p := s.prefix
	if prefix != "" {
		p += strings.TrimSuffix(prefix, "/") + "/"
	}
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("blob: list %s: %w", prefix, o.Err)
		}
		key := strings.TrimPrefix(o.Key, s.prefix)
		if err := fn(Info{Key: key, Size: o.Size, ModTime: o.LastModified, ContentType: ContentType(key)}); err != nil {
			return err
		}
	}
	return nil
}

// LocalPath implements Store: objects of S3 have none.
func (s *S3) LocalPath(string) (string, bool) { return "", false }

// MaxLinkTTL is the longest presigned link S3 accepts (SigV4: 7 days).
const MaxLinkTTL = 7 * 24 * time.Hour

// SignedURL implements Store: a presigned GET at the public endpoint. Presigning is offline
// (the region is configured), so it needs no context.
func (s *S3) SignedURL(key string, ttl time.Duration) (string, time.Time) {
	ttl = min(max(ttl, time.Second), MaxLinkTTL).Truncate(time.Second)
	now := time.Now()
	name, err := s.name(key)
	if err != nil {
		return "", now
	}
	u, err := s.presign.PresignedGetObject(context.Background(), s.bucket, name, ttl, nil)
	if err != nil {
		return "", now
	}
	return u.String(), now.Add(ttl)
}

func (s *S3) mapErr(key string, err error) error {
	switch minio.ToErrorResponse(err).Code {
	case minio.NoSuchKey, "NotFound":
		return fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return fmt.Errorf("blob: %s: %w", key, err)
}

// Scope names the bucket and prefix: the one retention job of every replica sharing them.
func (s *S3) Scope() string { return "s3:" + s.bucket + "/" + s.prefix }

// NoFiles answers every file link with file_not_found: the results of an object store are
// served by the store's own presigned links, never by this service.
type NoFiles struct{}

// ServeFile implements the file route's FileServer.
func (NoFiles) ServeFile(http.ResponseWriter, *http.Request) error { return errFileNotFound() }
