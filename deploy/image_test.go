package deploy_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"mediagen/internal/testkit"
)

// imageSizeBound is the most the image may weigh, uncompressed: issue 44's target, which is
// what an operator pulls to every node (bench/README.md "Container image" has where the bytes go).
const imageSizeBound = 150e6

// The container image (Dockerfile, `make image`) runs on the loopback of this machine: its
// `mediagen version` is the version its labels state, it stays within its size bound, and a
// `serve` on SQLite with a read-only root file system as the image's unprivileged user answers
// /healthz, turns healthy by its own HEALTHCHECK, and completes a sandbox video task (ffmpeg
// and ffprobe in the image render it) and a speech request (espeak-ng, LAME).
//
// It runs only when MEDIAGEN_TEST_IMAGE names a built image (`make image-test` builds it and
// sets it): building takes minutes, so `make test` does not run it yet. Set, it fails rather
// than skips when no Docker daemon answers.
func TestImageServesASandboxTaskOnAReadOnlyRoot(t *testing.T) {
	image := needImage(t)

	label := docker(t, "image", "inspect", "--format", `{{index .Config.Labels "org.opencontainers.image.version"}}`, image)
	if got := docker(t, "run", "--rm", image, "version"); got != "mediagen "+label || label == "" {
		t.Errorf("mediagen version in the image: %q, want %q (its version label)", got, "mediagen "+label)
	}
	if u := docker(t, "run", "--rm", "--entrypoint", "id", image, "-u"); u == "0" {
		t.Errorf("the image runs as root")
	}
	size, err := strconv.ParseInt(docker(t, "image", "inspect", "--format", "{{.Size}}", image), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s: %.1f MB uncompressed (bound %.0f MB)", image, float64(size)/1e6, imageSizeBound/1e6)
	if size > imageSizeBound {
		t.Errorf("image %s is %.1f MB, over the %.0f MB bound", image, float64(size)/1e6, imageSizeBound/1e6)
	}

	// --read-only: the image's volumes (/var/lib/mediagen, /tmp) are the only writable paths.
	start := time.Now()
	id := docker(t, "run", "-d", "--read-only", "-p", "127.0.0.1::8080", image, "serve", "--sandbox-pace", "200ms")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "logs", "--tail", "40", id).CombinedOutput()
			t.Logf("container log:\n%s", out)
		}
		_ = exec.Command("docker", "rm", "-f", "-v", id).Run()
	})
	hostPort := docker(t, "port", id, "8080/tcp")
	if i := strings.LastIndex(hostPort, ":"); i >= 0 {
		hostPort = hostPort[i+1:]
	}
	base := "http://127.0.0.1:" + strings.TrimSpace(strings.Split(hostPort, "\n")[0])
	testkit.WaitEvery(t, 10*time.Millisecond, 30*time.Second, "the container answers /healthz", func() bool {
		code, _ := get(t, base+"/healthz", "")
		return code == 200
	})
	t.Logf("cold start on SQLite: %v from docker run to a 200 from /healthz", time.Since(start).Round(time.Millisecond))

	out := docker(t, "exec", id, "mediagen", "admin", "key", "create", "--tenant", "demo", "--name", "image-test", "--credit", "10")
	m := regexp.MustCompile(`(?m)^secret: *(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no secret in mediagen admin key create's output:\n%s", out)
	}
	taskCompletes(t, base, m[1])

	// Speech: espeak-ng speaks, the lean ffmpeg encodes MP3 with Debian's LAME.
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/audio/speech",
		strings.NewReader(`{"model":"demo-speech","input":"Your order has shipped."}`))
	req.Header.Set("Authorization", "Bearer "+m[1])
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `"duration":`) {
		t.Errorf("speech in the image: %d %s", res.StatusCode, body)
	}

	// The image's own HEALTHCHECK (bash's /dev/tcp to /healthz) turns the container healthy.
	health := ""
	testkit.PollEvery(time.Second, 60*time.Second, func() bool {
		health = docker(t, "inspect", "--format", "{{.State.Health.Status}}", id)
		return health == "healthy"
	})
	if health != "healthy" {
		t.Errorf("container health %q after a minute, want healthy", health)
	}
}

// needImage is the image MEDIAGEN_TEST_IMAGE names, after checking that a Docker daemon
// answers; the test is skipped when it names none.
func needImage(t *testing.T) string {
	t.Helper()
	image := os.Getenv("MEDIAGEN_TEST_IMAGE")
	if image == "" {
		t.Skip("MEDIAGEN_TEST_IMAGE is not set (make image-test builds the image and sets it)")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		t.Fatalf("MEDIAGEN_TEST_IMAGE=%s but no Docker daemon answers (scripts/ensure-base-images.sh starts one): %v\n%s", image, err, out)
	}
	return image
}

// docker runs the docker client with a bounded wait and returns its trimmed standard output,
// failing the test (with its error output) when it fails.
func docker(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
