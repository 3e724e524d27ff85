package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/testkit"
)

// TestJSONLogsAreJSONEveryLineAndNeverHoldASecret runs serve as its own process with
// --log-format json, as an operator ships it (stdout and stderr are pipes, not a terminal):
// a first start, a task created with an X-Request-Id and run to its end, and a SIGTERM. Every
// line the process wrote is one JSON object; none holds a key's secret (the demo key's is
// printed only on a terminal, and the log says how to get one instead); the settlement line
// names the key, tenant and alias; and every line the worker wrote for the task carries the
// request id of the request that created it.
func TestJSONLogsAreJSONEveryLineAndNeverHoldASecret(t *testing.T) {
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	base := "http://" + addr
	key := childKey(t, dir)
	var stdout, stderr syncBuffer
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEDIAGEN_TEST_MAIN=1", "MEDIAGEN_TEST_ARGS="+strings.Join([]string{"serve", "--listen", addr,
		"--data-dir", dir, "--sandbox-pace", "100ms", "--log-format", "json", "--log-level", "debug"}, " "))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	waitReady(t, base)

	const requestID = "req-logs-test-1"
	req, _ := http.NewRequest("POST", base+"/v1/videos", strings.NewReader(
		`{"model":"demo-video-mini","prompt":"a log line","metadata":{"duration":4,"resolution":"480p","ratio":"1:1"}}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", requestID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var created struct{ ID string }
	if res.StatusCode != 202 || json.Unmarshal(body, &created) != nil || created.ID == "" {
		t.Fatalf("create: %d %s", res.StatusCode, body)
	}
	e := &e2e{t: t, key: key, tools: ffmpeg.Tools{}, base: base}
	if task := e.wait(created.ID); task.Status != "completed" {
		t.Fatalf("task %s ended %s", created.ID, task.Status)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of SIGTERM")
	}

	var lines []map[string]any
	for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if line == "" {
				continue
			}
			if strings.Contains(line, key) || reKey.MatchString(line) {
				t.Errorf("%s holds a key's secret: %s", name, line)
			}
			var l map[string]any
			if err := json.Unmarshal([]byte(line), &l); err != nil {
				t.Errorf("%s line is not JSON: %s", name, line)
				continue
			}
			lines = append(lines, l)
		}
	}
	msgs := map[string]map[string]any{}
	workerLines := 0
	for _, l := range lines {
		msg, _ := l["msg"].(string)
		msgs[msg] = l
		if l["task"] == created.ID || l["task_id"] == created.ID || l["job"] == "video.task:"+created.ID {
			workerLines++
			if l["request_id"] != requestID {
				t.Errorf("worker line for the task without its request id: %v", l)
			}
		}
	}
	if workerLines == 0 {
		t.Error("no worker line for the task")
	}
	if l := msgs["http request"]; l == nil {
		t.Error("no access log line")
	}
	fin := msgs["task finished"]
	if fin == nil || fin["key_id"] == nil || fin["key_id"] == "" || fin["tenant_id"] != "demo" || fin["alias"] != "demo-video-mini" {
		t.Errorf("settlement line %v, want key_id, tenant_id and alias", fin)
	}
	if msgs["mediagen shutting down"] == nil {
		t.Error("no shutdown line")
	}
	demo := false
	for msg, l := range msgs {
		if strings.HasPrefix(msg, "demo key made") {
			demo = strings.Contains(l["another_key"].(string), "mediagen admin key create")
		}
	}
	if !demo {
		t.Error("no line says how to get a key")
	}
}

// A start that fails in JSON mode says so in JSON; main prints nothing more.
func TestFailedStartInJSONModeIsOneJSONLine(t *testing.T) {
	t.Parallel()
	var stdout, stderr syncBuffer
	args := []string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-format", "json", "--db", "mysql://x"}
	err := run(t.Context(), args, env(nil), &stdout, &stderr)
	var r reported
	if !errors.As(err, &r) || exitCode(err) != 1 {
		t.Fatalf("err = %v (exit %d), want it reported in the log, exit 1", err, exitCode(err))
	}
	failed := false
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var l struct{ Msg, Err string }
		if json.Unmarshal([]byte(line), &l) != nil {
			t.Fatalf("not JSON: %s", line)
		}
		failed = failed || l.Msg == "mediagen cannot serve" && strings.Contains(l.Err, "unsupported database URL")
	}
	if !failed || stdout.String() != "" {
		t.Errorf("stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	}
}
