package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider/runway/runwayfake"
)

// runwaySDK gives the directory whose node_modules holds the Runway Node SDK pinned by
// test/runway-sdk/package-lock.json: MEDIAGEN_TEST_RUNWAY_SDK when make test set it, else what
// scripts/ensure-runway-sdk.sh installs. Under CI=true a missing Node.js or SDK fails the
// test; elsewhere the test skips when node or npm is not on the machine.
func runwaySDK(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("MEDIAGEN_TEST_RUNWAY_SDK"); dir != "" {
		return dir
	}
	ci := os.Getenv("CI") == "true"
	if !ci {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not on PATH (scripts/ensure-runway-sdk.sh installs it)", tool)
			}
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "ensure-runway-sdk.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ci {
			t.Fatalf("Runway SDK required under CI=true: %v\n%s", err, stderr.Bytes())
		}
		t.Skipf("Runway SDK not installed: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// runwayTask is the part of the SDK's TaskRetrieveResponse the test reads.
type runwayTask struct {
	ID          string   `json:"id"`
	Status      string   `json:"status"`
	Output      []string `json:"output"`
	FailureCode string   `json:"failureCode"`
	Cost        *struct {
		Credits float64 `json:"credits"`
	} `json:"cost"`
}

type runwaySDKError struct {
	Status int    `json:"status"`
	Name   string `json:"name"`
}

// The official Runway Node SDK, at the exact version test/runway-sdk pins, drives runwayfake
// unchanged (test/runway-sdk/tasks.mjs): a text_to_video create and an image_to_video create
// (promptImage as a string and as the array form) read to their end, a task cancelled with
// DELETE, a missing task (404, NotFoundError) and a refused key (401,
// AuthenticationError). The fake checks every header and field the SDK sends against the
// format it was written from, so a fake that drifted from the SDK fails here.
func TestRunwayNodeSDKDrivesTheFakeUnchanged(t *testing.T) {
	t.Parallel()
	sdkDir := runwaySDK(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip.mp4")
	if err := os.WriteFile(clip, []byte("clip"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := runwayfake.Start(runwayfake.Config{Key: runwayTestKey, Clip: clip, Polls: 1})
	t.Cleanup(fake.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fake.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "test", "runway-sdk", "tasks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The script is run from a copy beside the SDK's node_modules, where Node resolves it.
	runDir := filepath.Join(sdkDir, "run-"+filepath.Base(dir))
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, "tasks.mjs"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", filepath.Join(runDir, "tasks.mjs"), fake.Base())
	cmd.Env = append(os.Environ(), "RUNWAYML_API_SECRET="+runwayTestKey, "NODE_EXTRA_CA_CERTS="+ca)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var got struct {
		Text, Image, Cancelled runwayTask
		Missing, Refused       runwaySDKError
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Text.Status != "SUCCEEDED" || len(got.Text.Output) != 1 || got.Text.Cost == nil || got.Text.Cost.Credits != 60 {
		t.Errorf("text task %+v, want SUCCEEDED with one output at 60 credits (5 s of gen4.5)", got.Text)
	}
	if got.Image.Status != "SUCCEEDED" || got.Image.Cost == nil || got.Image.Cost.Credits != 50 {
		t.Errorf("image task %+v, want SUCCEEDED at 50 credits (10 s of gen4_turbo)", got.Image)
	}
	if got.Cancelled.Status != "CANCELLED" || fake.Cancelled() != 1 {
		t.Errorf("cancelled task %+v (%d cancels)", got.Cancelled, fake.Cancelled())
	}
	if got.Missing != (runwaySDKError{404, "NotFoundError"}) || got.Refused != (runwaySDKError{401, "AuthenticationError"}) {
		t.Errorf("errors: missing %+v, refused %+v", got.Missing, got.Refused)
	}
	for _, p := range []string{"sdk text cat", "sdk image cat", "sdk frame cat"} {
		if fake.JobsFor(p) != 1 {
			t.Errorf("%q made %d jobs", p, fake.JobsFor(p))
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("the SDK's request broke the fake's format: %s", v)
	}
}
