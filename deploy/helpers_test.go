package deploy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"mediagen/internal/store/postgres/pgtest"
)

// mediagenBin is the binary built from this tree once for the package (TestMain).
var mediagenBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mediagen-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mediagenBin = filepath.Join(dir, "mediagen")
	if out, err := exec.Command("go", "build", "-o", mediagenBin, "mediagen/cmd/mediagen").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mediagen: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// skipOrFail skips a test whose infrastructure is missing, except under CI=true, where it
// fails: the deployment tests never skip there.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// needPostgres is the server's base URL (MEDIAGEN_TEST_POSTGRES_URL or the default) and an
// open connection to it, or a skip when it does not answer.
func needPostgres(t *testing.T) (string, *sql.DB) {
	t.Helper()
	base := pgtest.BaseURL()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		skipOrFail(t, "no PostgreSQL at %s (scripts/ensure-postgres.sh): %v", base, err)
	}
	return base, db
}

// needMinIO is the MinIO binary of MEDIAGEN_TEST_MINIO (scripts/ensure-minio.sh).
func needMinIO(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("MEDIAGEN_TEST_MINIO")
	if bin == "" {
		skipOrFail(t, "no MinIO binary (MEDIAGEN_TEST_MINIO): make test builds one with scripts/ensure-minio.sh")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("MEDIAGEN_TEST_MINIO: %v", err)
	}
	return bin
}

// dropDatabase removes a database the test made (and its role, when role is not "").
func dropDatabase(t *testing.T, db *sql.DB, name, role string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
		if role != "" {
			if _, err := db.ExecContext(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
				t.Errorf("drop role %s: %v", role, err)
			}
		}
	})
}

// freePorts is the first of n consecutive loopback ports that nothing listens on now.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 100; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		first := l.Addr().(*net.TCPAddr).Port
		held := []net.Listener{l}
		ok := first+n <= 65535
		for p := first + 1; ok && p < first+n; p++ {
			if l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
				held = append(held, l2)
			} else {
				ok = false
			}
		}
		for _, h := range held {
			h.Close()
		}
		if ok {
			return first
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer is a bytes.Buffer safe for a process's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// groupGone reports whether no process of the process group pgid is left.
func groupGone(pgid int) bool {
	return syscall.Kill(-pgid, 0) == syscall.ESRCH
}
