// Package s3test starts a real MinIO server for tests: the binary scripts/ensure-minio.sh
// builds and caches (its path in MEDIAGEN_TEST_MINIO), on a free loopback address, with a data
// directory of the test's own. Without the binary the test is skipped — under CI=true it
// fails instead: the S3 tests never skip there.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"mediagen/internal/blob"
	"mediagen/internal/testkit"
)

// Server is a running MinIO.
type Server struct {
	Endpoint             string // host:port, the host a loopback address of its own
	AccessKey, SecretKey string
	Region               string // the region the server checks requests against
	client               *minio.Client
}

// Start starts a MinIO server for the test and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartInRegion(t, "us-east-1")
}

// StartInRegion starts a MinIO server that refuses requests signed for another region than
// region (MINIO_SITE_REGION), as AWS S3 refuses a bucket's wrong region.
func StartInRegion(t testing.TB, region string) *Server {
	t.Helper()
	bin := os.Getenv("MEDIAGEN_TEST_MINIO")
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MEDIAGEN_TEST_MINIO is not set: run the tests with make test (scripts/ensure-minio.sh builds MinIO)")
		}
		t.Skip("no MinIO binary (MEDIAGEN_TEST_MINIO): make test builds one with scripts/ensure-minio.sh")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MEDIAGEN_TEST_MINIO: %v", err)
	}
	s := &Server{AccessKey: "mediagen-" + randHex(4), SecretKey: randHex(16), Region: region}
	api, console := testkit.FreeAddr(t), testkit.FreeAddr(t)
	s.Endpoint = api
	cmd := exec.Command(bin, "server", "--quiet", "--address", api, "--console-address", console, t.TempDir())
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+s.AccessKey, "MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1", "MINIO_SITE_REGION="+region)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start MinIO: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + api + "/minio/health/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("MinIO did not become ready on %s: %v\n%s", api, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	c, err := minio.New(api, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: region})
	if err != nil {
		t.Fatal(err)
	}
	s.client = c
	if region != "us-east-1" { // MinIO's default region accepts requests signed for any other
		s.awaitRegion(t, time.Now().Add(30*time.Second))
	}
	return s
}

// awaitRegion waits until the server refuses a bucket request signed for another region.
// MinIO reads its site configuration (the region) once its object layer is up, which is also
// when /minio/health/ready starts answering 200; a request in between is accepted whatever
// region it is signed for. A CI run on a loaded machine saw NewS3 open a bucket of this
// server with the wrong region ("a bucket in another region" in the blob tests).
func (s *Server) awaitRegion(t testing.TB, deadline time.Time) {
	t.Helper()
	other, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""), Region: "mediagen-not-" + s.Region})
	if err != nil {
		t.Fatal(err)
	}
	for {
		// A bucket request: MinIO checks the region of those, not of ListBuckets.
		_, err := other.BucketExists(context.Background(), "mediagen-region-check")
		if err != nil && strings.Contains(err.Error(), s.Region) {
			return // refused, naming the region it expects
		}
		if time.Now().After(deadline) {
			t.Fatalf("MinIO on %s did not come to check region %s: %v", s.Endpoint, s.Region, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Bucket makes a new bucket and returns its name.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name := "test-" + randHex(6)
	if err := s.client.MakeBucket(context.Background(), name, minio.MakeBucketOptions{Region: s.Region}); err != nil {
		t.Fatalf("make bucket: %v", err)
	}
	return name
}

// Config is an S3 store configuration of a new bucket on the server (under prefix).
func (s *Server) Config(t testing.TB, prefix string) blob.S3Config {
	t.Helper()
	return blob.S3Config{Endpoint: s.Endpoint, Region: s.Region, Bucket: s.Bucket(t), Prefix: prefix, AccessKey: s.AccessKey, SecretKey: s.SecretKey, PartMB: 5}
}

// URL is the MEDIAGEN_BLOB form of a new bucket on the server, with the environment that
// carries its credentials.
func (s *Server) URL(t testing.TB, prefix string) (string, map[string]string) {
	t.Helper()
	u := fmt.Sprintf("s3://%s/%s?endpoint=%s&secure=false", s.Bucket(t), prefix, s.Endpoint)
	return u, map[string]string{"AWS_ACCESS_KEY_ID": s.AccessKey, "AWS_SECRET_ACCESS_KEY": s.SecretKey}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
