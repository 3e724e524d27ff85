// Package miniosrv starts a MinIO server for the benchmarks and the chaos harness.
package miniosrv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"mediagen/bench/internal/proc"
)

// Server is a MinIO of the caller's own (the binary scripts/ensure-minio.sh caches), on a
// free loopback port, with one bucket.
type Server struct {
	bin, dir, console string
	Addr              string // 127.0.0.1:port
	Access, Secret    string
	Bucket            string
	P                 *proc.Proc
	logDir            string
	Client            *minio.Client
}

// Start starts MinIO with its data and log in dir and makes the bucket "bench".
func Start(ctx context.Context, bin, dir string) (*Server, error) {
	if bin == "" {
		return nil, errors.New("no MinIO binary: pass -minio or set MEDIAGEN_TEST_MINIO (scripts/ensure-minio.sh builds one)")
	}
	m := &Server{bin: bin, dir: filepath.Join(dir, "minio"), logDir: dir, Access: "bench-" + randHex(4), Secret: randHex(16), Bucket: "bench"}
	var err error
	if m.Addr, err = proc.FreeAddr(); err != nil {
		return nil, err
	}
	if m.console, err = proc.FreeAddr(); err != nil {
		return nil, err
	}
	if err := m.start(ctx); err != nil {
		return nil, err
	}
	m.Client, err = minio.New(m.Addr, &minio.Options{Creds: credentials.NewStaticV4(m.Access, m.Secret, ""), Region: "us-east-1"})
	if err != nil {
		return nil, err
	}
	return m, m.Client.MakeBucket(ctx, m.Bucket, minio.MakeBucketOptions{Region: "us-east-1"})
}

// Restart starts the server again on the same address and data (after P was stopped).
func (m *Server) Restart(ctx context.Context) error { return m.start(ctx) }

func (m *Server) start(ctx context.Context) error {
	env := append(os.Environ(), "MINIO_ROOT_USER="+m.Access, "MINIO_ROOT_PASSWORD="+m.Secret, "MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1")
	p, err := proc.Start("minio", m.bin, filepath.Join(m.logDir, "minio.log"), env, "server", "--quiet", "--address", m.Addr, "--console-address", m.console, m.dir)
	if err != nil {
		return err
	}
	m.P = p
	return proc.WaitReady(ctx, p, "http://"+m.Addr, "/minio/health/ready", 30*time.Second)
}

// BlobURL is the MEDIAGEN_BLOB form of the bucket, under prefix.
func (m *Server) BlobURL(prefix string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s&secure=false", m.Bucket, prefix, m.Addr)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
