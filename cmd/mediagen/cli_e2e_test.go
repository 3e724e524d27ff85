package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/mediagen-dev/mediagen/client"
)

// cli runs one client command in-process against the service and returns its output.
func (e *e2e) cli(ctx context.Context, args ...string) (string, string, error) {
	e.t.Helper()
	vars := map[string]string{"MEDIAGEN_API_KEY": e.key, "MEDIAGEN_BASE_URL": e.baseURL(), "MEDIAGEN_POLL_INTERVAL": "100ms"}
	var stdout, stderr bytes.Buffer
	err := run(ctx, args, env(vars), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestCLIVideoCreateWaitOutSavesTheResult(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	out := filepath.Join(t.TempDir(), "result.mp4")
	stdout, stderr, err := e.cli(context.Background(), "video", "create", "--model", "demo-video-fast", "--duration", "4",
		"--resolution", "480p", "--audio", "true", "--wait", "--out", out, "a paper boat")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, stdout, stderr)
	}
	info, err := e.tools.Probe(context.Background(), out)
	if err != nil || info.Height != 480 || !near(info.Duration, 4, 0.05) || !info.HasAudio {
		t.Fatalf("saved file: %+v %v", info, err)
	}
	// Not a terminal: plain lines, the last one the completed task; then the download.
	if !regexp.MustCompile(`(?m)^video_\S+ completed 100%$`).MatchString(stderr) || !strings.Contains(stderr, "saved "+out) {
		t.Fatalf("progress lines:\n%s", stderr)
	}
	if !strings.Contains(stdout, "completed 100%") || !strings.Contains(stdout, "saved "+out) {
		t.Fatalf("stdout:\n%s", stdout)
	}
}

func TestCLIJSONPrintsTheTaskOnlyAndFailedTasksExitNonZero(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	stdout, stderr, err := e.cli(context.Background(), "video", "create", "--json", "--model", "demo-video-2.5", "--wait",
		"--prompt", "broken on purpose [sandbox:fail=InvalidParameter.TaskTypeMismatch]")
	var te *client.TaskError
	if !errors.As(err, &te) || te.Code != "InvalidParameter.TaskTypeMismatch" || exitCode(err) != 1 {
		t.Fatalf("err = %v, want the task's error", err)
	}
	if stderr != "" {
		t.Fatalf("--json wrote to stderr: %q", stderr)
	}
	var v client.Video
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || v.Status != "failed" || v.Error == nil {
		t.Fatalf("stdout is not the failed task: %v\n%s", err, stdout)
	}
}

func TestCLICtrlCWhileWaitingLeavesTheTaskAndAnotherProcessResumes(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := filepath.Join(t.TempDir(), "later.mp4")
	time.AfterFunc(700*time.Millisecond, cancel) // Ctrl-C cancels the command's context
	_, stderr, err := e.cli(ctx, "video", "create", "--model", "demo-video-fast", "--duration", "4", "--resolution", "480p",
		"--wait", "--out", out, "slow [sandbox:slow=3s]")
	if exitCode(err) != 130 || !strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("err = %v (exit %d), want the interruption", err, exitCode(err))
	}
	m := regexp.MustCompile(`resume with: mediagen (video wait (video_\S+) --out \S+)`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no resume command in %q (stderr %s)", err, stderr)
	}
	// The resume command, in a new process.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MEDIAGEN_TEST_MAIN=1", "MEDIAGEN_TEST_ARGS="+m[1],
		"MEDIAGEN_API_KEY="+e.key, "MEDIAGEN_BASE_URL="+e.baseURL(), "MEDIAGEN_POLL_INTERVAL=100ms")
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("resumed process: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), m[2]+" demo-video-fast completed 100%") {
		t.Fatalf("resumed process output:\n%s", got)
	}
	if info, err := e.tools.Probe(context.Background(), out); err != nil || !near(info.Duration, 4, 0.05) {
		t.Fatalf("saved file: %+v %v", info, err)
	}
	if n := countTasks(t, filepath.Join(e.m.Config.DataDir, "mediagen.db")); n != 1 {
		t.Fatalf("%d tasks, want the one", n)
	}
}

func TestCLISpeechBalanceAndAssets(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	ctx := context.Background()
	mp3 := filepath.Join(t.TempDir(), "speech.mp3")
	if stdout, stderr, err := e.cli(ctx, "speech", "Your order has shipped.", "--out", mp3); err != nil || !strings.Contains(stdout, "saved "+mp3) {
		t.Fatalf("speech: %v\n%s%s", err, stdout, stderr)
	}
	if info, err := e.tools.Probe(ctx, mp3); err != nil || info.Duration <= 0 {
		t.Fatalf("speech file: %+v %v", info, err)
	}
	stdout, _, err := e.cli(ctx, "balance")
	if err != nil || !regexp.MustCompile(`^available \d+(\.\d+)? USD, used \d+(\.\d+)? USD\n$`).MatchString(stdout) {
		t.Fatalf("balance: %v %q", err, stdout)
	}
	stdout, _, err = e.cli(ctx, "assets", "group-create", "Brand")
	var g client.AssetGroup
	if err != nil || json.Unmarshal([]byte(stdout), &g) != nil || g.ID == "" {
		t.Fatalf("group-create: %v %s", err, stdout)
	}
	stdout, _, err = e.cli(ctx, "assets", "create", "--group", g.ID, "--url", e.input, "--type", "Video", "--name", "clip", "--wait")
	var a client.Asset
	if err != nil || json.Unmarshal([]byte(stdout), &a) != nil || a.Status != "Active" || !near(a.Duration, 2.5, 0.05) {
		t.Fatalf("assets create: %v %s", err, stdout)
	}
	stdout, _, err = e.cli(ctx, "assets", "list", "--group", g.ID)
	var list client.AssetList
	if err != nil || json.Unmarshal([]byte(stdout), &list) != nil || list.TotalCount != 1 || list.Items[0].ID != a.ID {
		t.Fatalf("assets list: %v %s", err, stdout)
	}
	_, _, err = e.cli(ctx, "assets", "get", "asset_missing")
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "asset_not_found" {
		t.Fatalf("assets get unknown: %v", err)
	}
}

func TestCLIWithoutKeyIsAUsageError(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"balance"}, env(nil), &stdout, &stderr)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "MEDIAGEN_API_KEY") {
		t.Fatalf("err = %v", err)
	}
}

// -h prints every flag's default; the API key from the environment must not be one of them.
func TestCLIHelpNeverPrintsTheAPIKey(t *testing.T) {
	t.Parallel()
	const secret = "mg_secretsecretsecretsecretsecretsecret00"
	for _, args := range [][]string{{"balance", "-h"}, {"video", "create", "-h"}, {"speech", "-h"}, {"assets", "list", "-h"}, {"tour", "-h"}} {
		var stdout, stderr bytes.Buffer
		_ = run(context.Background(), args, env(map[string]string{"MEDIAGEN_API_KEY": secret}), &stdout, &stderr)
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			t.Errorf("mediagen %s printed the API key", strings.Join(args, " "))
		}
	}
}
