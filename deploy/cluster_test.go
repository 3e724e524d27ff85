package deploy_test

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/testkit"
)

// scripts/cluster.sh (`make cluster`) brings up PostgreSQL's database, MinIO and its bucket and
// two replicas on the ports it is given, prints their addresses and a demo key that creates a
// task the worker runs, and on SIGINT stops every process it started.
func TestClusterScriptStartsServesAndStopsOnSIGINT(t *testing.T) {
	base, db := needPostgres(t)
	minio := needMinIO(t)
	port, minioPort := freePorts(t, 2), freePorts(t, 2)
	name := "mediagen_cluster_" + randHex(4)
	dropDatabase(t, db, name, "")

	cmd := exec.Command("bash", "../scripts/cluster.sh")
	cmd.Env = append(os.Environ(), "N=2", "CLUSTER_DIR="+t.TempDir(), "CLUSTER_PORT="+strconv.Itoa(port),
		"CLUSTER_MINIO_PORT="+strconv.Itoa(minioPort), "CLUSTER_DB="+name, "MEDIAGEN_BIN="+mediagenBin,
		"MINIO_BIN="+minio, "MEDIAGEN_TEST_POSTGRES_URL="+base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })

	// Up: read what it prints until the last line of the banner.
	var out []string
	up := time.After(3 * time.Minute) // building nothing, a cold MinIO start takes seconds
	for banner := false; !banner; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("cluster.sh ended before it was up:\n%s\n%s", strings.Join(out, "\n"), stderr.String())
			}
			out = append(out, l)
			banner = l == "Ctrl-C stops everything."
		case <-up:
			t.Fatalf("cluster.sh not up after 3 minutes:\n%s\n%s", strings.Join(out, "\n"), stderr.String())
		}
	}
	printed := strings.Join(out, "\n")
	t.Logf("cluster.sh printed:\n%s", printed)
	replicas := regexp.MustCompile(`(?m)^\s+r\d+\s+(api|worker)\s+(http://\S+)$`).FindAllStringSubmatch(printed, -1)
	key := regexp.MustCompile(`(?m)^\s+demo key\s+(\S+)$`).FindStringSubmatch(printed)
	if len(replicas) != 2 || key == nil {
		t.Fatalf("want 2 replicas and a demo key in:\n%s", printed)
	}
	for _, r := range replicas {
		if code, body := get(t, r[2]+"/readyz", ""); code != http.StatusOK {
			t.Errorf("%s /readyz: %d %s", r[2], code, body)
		}
	}
	if replicas[0][1] != "api" || replicas[1][1] != "worker" {
		t.Errorf("roles %s, %s; want api, worker", replicas[0][1], replicas[1][1])
	}
	// The API replica runs no tasks: the worker does, and stores the result in MinIO.
	taskCompletes(t, replicas[0][2], key[1])

	// Down: SIGINT to the script alone, as Ctrl-C would; every process of its group goes.
	if err := syscall.Kill(pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines { // drain, so the reader reaches Wait
		}
	}()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Errorf("cluster.sh exited with %v after SIGINT, want 0:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("cluster.sh still running a minute after SIGINT:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "cluster: stopped") {
		t.Errorf("no 'stopped' line:\n%s", stderr.String())
	}
	if !testkit.Poll(5*time.Second, func() bool { return groupGone(pgid) }) {
		out, _ := exec.Command("ps", "-o", "pid,args", "-g", strconv.Itoa(pgid)).CombinedOutput()
		t.Errorf("processes left after SIGINT:\n%s", out)
	}
}

// get is a GET with an optional bearer key: the status and the body.
func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// taskCompletes creates a task on the API at base with key and waits (bounded) until it has
// completed: some worker ran it.
func taskCompletes(t *testing.T, base, key string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(`{"model":"demo-video-fast","prompt":"a lighthouse at dusk"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("create a task: %d %s", res.StatusCode, body)
	}
	id := regexp.MustCompile(`"id":"(video_[a-z0-9]+)"`).FindSubmatch(body)
	if id == nil {
		t.Fatalf("no task id in %s", body)
	}
	status := ""
	// PollEvery, not WaitEvery: a task that never ends is an error, and the caller still
	// checks that SIGINT stops the cluster.
	testkit.PollEvery(250*time.Millisecond, time.Minute, func() bool {
		_, b := get(t, base+"/v1/videos/"+string(id[1]), key)
		if m := regexp.MustCompile(`"status":"([a-z_]+)"`).FindStringSubmatch(b); m != nil {
			status = m[1]
		}
		return status == "completed" || status == "failed"
	})
	if status != "completed" {
		t.Errorf("task %s: status %q within a minute, want completed", id[1], status)
	}
}
