package deploy_test

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"mediagen/internal/testkit"
)

// `docker compose up` of deploy/compose brings up PostgreSQL, MinIO, the bucket, an api and a
// worker: `hello` prints the console's address and the command that issues the demo key's
// secret, that command works, a task created on the api is completed by the worker, and after
// `down` a second `up` still has the task and the key (the data is in volumes).
//
// Like TestImage…, it runs only when MEDIAGEN_TEST_IMAGE names a built image; it also needs
// the postgres and minio images (scripts/ensure-base-images.sh makes them where no registry
// answers) and docker compose or docker-compose. It runs as a project of its own on free
// loopback ports and deletes its volumes at the end.
func TestComposeUpServesAndKeepsDataAcrossUp(t *testing.T) {
	image := os.Getenv("MEDIAGEN_TEST_IMAGE")
	if image == "" {
		t.Skip("MEDIAGEN_TEST_IMAGE is not set (make image-test builds the image and sets it)")
	}
	compose := []string{"docker", "compose"}
	if exec.Command("docker", "compose", "version").Run() != nil {
		if _, err := exec.LookPath("docker-compose"); err != nil {
			t.Fatal("neither docker compose nor docker-compose is installed (apt-get install docker-compose)")
		}
		compose = []string{"docker-compose"}
	}
	port := freePorts(t, 2)
	project := "mgtest" + randHex(4)
	env := append(os.Environ(), "MEDIAGEN_IMAGE="+image, "COMPOSE_PROJECT_NAME="+project,
		"MEDIAGEN_ADDR=127.0.0.1:"+strconv.Itoa(port), "MEDIAGEN_S3_PORT="+strconv.Itoa(port+1),
		"MEDIAGEN_PUBLIC_URL=http://127.0.0.1:"+strconv.Itoa(port), "MEDIAGEN_S3_PUBLIC=127.0.0.1:"+strconv.Itoa(port+1))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(compose[0], append(compose[1:], args...)...)
		cmd.Dir = "compose"
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", strings.Join(compose, " "), strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		cmd := exec.Command(compose[0], append(compose[1:], "down", "-v", "--remove-orphans")...)
		cmd.Dir, cmd.Env = "compose", env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("down -v: %v\n%s", err, out)
		}
	})

	start := time.Now()
	run("up", "-d")
	hello := ""
	testkit.PollEvery(500*time.Millisecond, 2*time.Minute, func() bool {
		hello = run("logs", "--no-color", "hello")
		return strings.Contains(hello, "admin key rotate key_")
	})
	t.Logf("first up: %v until hello printed", time.Since(start).Round(time.Second))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	if !strings.Contains(hello, base+"/console/") {
		t.Errorf("hello does not name the console at %s/console/:\n%s", base, hello)
	}
	m := regexp.MustCompile(`admin key rotate (key_[a-z0-9]+)`).FindStringSubmatch(hello)
	if m == nil {
		t.Fatalf("hello names no demo key:\n%s", hello)
	}
	rotated := run("exec", "-T", "api", "mediagen", "admin", "key", "rotate", m[1])
	secret := regexp.MustCompile(`(?m)^secret: *(\S+)`).FindStringSubmatch(rotated)
	if secret == nil {
		t.Fatalf("no secret from key rotate:\n%s", rotated)
	}
	taskCompletes(t, base, secret[1])

	run("down")
	run("up", "-d")
	testkit.WaitEvery(t, 250*time.Millisecond, 2*time.Minute, "the api answers after a second up", func() bool {
		code, _ := get(t, base+"/readyz", "")
		return code == 200
	})
	// The key made before `down` still works and its spending is still there.
	code, body := get(t, base+"/v1/billing/balance", secret[1])
	if code != 200 || strings.Contains(body, `"used":0,`) {
		t.Errorf("balance after a second up: %d %s, want the first task's charge", code, body)
	}
}
