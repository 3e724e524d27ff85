package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"mediagen/bench/internal/proc"
	"mediagen/internal/catalog"
)

// postgres is a PostgreSQL server of the harness's own (initdb in its directory, a free port),
// so that stopping it hurts nobody else's database.
type postgres struct {
	bin, dir, port string
	runAs          string // the OS user that runs it ("" = this one): PostgreSQL refuses root
	p              *proc.Proc
	logDir         string
}

// pgBinDir finds the directory of initdb and postgres: PATH, pg_config, or Debian's layout.
func pgBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if fileExists(filepath.Join(dirs[i], "initdb")) {
			return dirs[i], nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb): scripts/ensure-postgres.sh installs PostgreSQL")
}

func startPostgres(ctx context.Context, dir string) (*postgres, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	pg := &postgres{bin: bin, dir: filepath.Join(dir, "pgdata"), logDir: dir}
	if os.Geteuid() == 0 {
		pg.runAs = "postgres" // Debian's package makes this user
		if _, err := user.Lookup(pg.runAs); err != nil {
			return nil, errors.New("running as root and there is no postgres user to run PostgreSQL as")
		}
	}
	if err := os.MkdirAll(pg.dir, 0o700); err != nil {
		return nil, err
	}
	if pg.runAs != "" {
		u, _ := user.Lookup(pg.runAs)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(pg.dir, uid, gid); err != nil {
			return nil, err
		}
		_ = os.Chmod(dir, 0o755) // the postgres user must reach its data directory
	}
	if out, err := pg.command(filepath.Join(bin, "initdb"), "-D", pg.dir, "-A", "trust", "-U", "postgres", "--no-sync").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	pg.port = addr[strings.LastIndexByte(addr, ':')+1:]
	return pg, pg.start(ctx)
}

func (pg *postgres) command(bin string, args ...string) *exec.Cmd {
	if pg.runAs == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("runuser", append([]string{"-u", pg.runAs, "--", bin}, args...)...)
}

// start runs the server. fsync is off: the harness kills the database server, not the machine.
func (pg *postgres) start(ctx context.Context) error {
	bin, args := filepath.Join(pg.bin, "postgres"), []string{"-D", pg.dir, "-p", pg.port, "-k", pg.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=300", "-c", "shared_buffers=128MB"}
	if pg.runAs != "" {
		bin, args = "runuser", append([]string{"-u", pg.runAs, "--", bin}, args...)
	}
	p, err := proc.Start("postgres", bin, filepath.Join(pg.logDir, "postgres.log"), os.Environ(), args...)
	if err != nil {
		return err
	}
	pg.p = p
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("postgres exited: %s", p.LogTail(10))
		}
		if pg.ping(ctx) == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("postgres did not become ready in 30 s: " + pg.p.LogTail(10))
}

// crash stops the server the way a crash does (SIGQUIT to the postmaster: immediate shutdown,
// every connection cut, recovery at the next start).
func (pg *postgres) crash() {
	pg.p.Stop(0)
	// runuser forwards the signal, but make sure nothing of the old server lingers.
	_ = exec.Command("pkill", "-QUIT", "-f", "postgres -D "+pg.dir).Run()
	for i := 0; i < 100 && exec.Command("pgrep", "-f", "postgres -D "+pg.dir).Run() == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
}

func (pg *postgres) ping(ctx context.Context) error {
	db, err := sql.Open("pgx", pg.url())
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func (pg *postgres) url() string {
	return "postgres://postgres@127.0.0.1:" + pg.port + "/postgres?sslmode=disable"
}

// fixtures are the media the workload references: a clip and an image on an HTTPS server
// of the harness (asset sources and enhancement sources), and the trust bundle the replicas
// need to reach it and the fake Ark.
type fixtures struct {
	media  *httptest.Server
	caFile string
}

func (f *fixtures) url(name string) string { return f.media.URL + "/" + name }

// writeCABundle writes the certificates of the loopback TLS servers into one PEM file, for
// SSL_CERT_FILE of the replicas.
func writeCABundle(path string, certs ...*x509.Certificate) error {
	var b []byte
	for _, c := range certs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return os.WriteFile(path, b, 0o644)
}

// chaosCatalog is the demo catalog with demo-video-fast bound to the fake Ark and every limit
// of the demo tenant lifted (the workload is one key).
func chaosCatalog(path, arkBase string) error {
	demo := string(catalog.DemoYAML())
	i := strings.Index(demo, "alias: demo-video-fast\n")
	j := strings.Index(demo[max(i, 0):], "upstream: sandbox")
	at := "  - id: demo\n"
	k := strings.Index(demo, at)
	if i < 0 || j < 0 || k < 0 || k > i {
		return errors.New("chaos catalog: the demo catalog's layout changed")
	}
	demo = demo[:i+j] + "upstream: ark-main" + demo[i+j+len("upstream: sandbox"):]
	demo = strings.Replace(demo, at, at+`    limits:
      key: {requests_per_second: unlimited, concurrent_requests: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
      tenant: {requests_per_second: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
`, 1)
	text := "upstreams:\n  - name: ark-main\n    kind: ark\n    base_url: " + arkBase + "\n    api_key_env: CHAOS_ARK_KEY\n    max_in_flight: 20\n    timeout_seconds: 5\n" + demo
	if _, err := catalog.Parse(path, []byte(text)); err != nil {
		return fmt.Errorf("chaos catalog: %w", err)
	}
	return os.WriteFile(path, []byte(text), 0o644)
}

// replica is one mediagen serve process the harness keeps at a fixed address, restarting it
// after each kill.
type replica struct {
	name, role, addr string
	args             []string
	env              []string
	bin, logDir      string

	mu       sync.Mutex
	p        *proc.Proc
	restarts int
}

func (r *replica) base() string { return "http://" + r.addr }

// restart starts the replica again and again, as a supervisor would, until it is up: a
// replica started while the database is down exits at once.
func (r *replica) restart(ctx context.Context, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		err := r.start(ctx)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Second)
	}
}

func (r *replica) start(ctx context.Context) error {
	r.mu.Lock()
	n := r.restarts
	r.restarts++
	r.mu.Unlock()
	p, err := proc.Start(r.name, r.bin, filepath.Join(r.logDir, fmt.Sprintf("%s-%03d.log", r.name, n)), r.env, r.args...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
	return proc.WaitReady(ctx, p, r.base(), "/healthz", 60*time.Second)
}

// kill sends SIGKILL to the replica's process group and waits for it to be gone.
func (r *replica) kill() {
	r.mu.Lock()
	p := r.p
	r.mu.Unlock()
	if p == nil {
		return
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.Done()
}

func (r *replica) stop() {
	r.mu.Lock()
	p := r.p
	r.mu.Unlock()
	if p != nil {
		p.Stop(10 * time.Second)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// httpClient is the workload's client: short timeouts, no proxy.
func httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}}
}
