package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// webhooksSDK gives the directory whose node_modules holds the OpenAI Node SDK pinned by
// test/webhooks-sdk (7.57.0: the first with webhook endpoint management; the videos test's
// pin, test/node-sdk, is older and has only unwrap): MEDIAGEN_TEST_WEBHOOKS_SDK when set, else
// what scripts/ensure-webhooks-sdk.sh installs. Under CI=true a missing Node.js or SDK fails
// the test; elsewhere it skips.
func webhooksSDK(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("MEDIAGEN_TEST_WEBHOOKS_SDK"); dir != "" {
		return dir
	}
	ci := os.Getenv("CI") == "true"
	if !ci {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not on PATH (scripts/ensure-webhooks-sdk.sh installs it)", tool)
			}
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "ensure-webhooks-sdk.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ci {
			t.Fatalf("OpenAI Node SDK required under CI=true: %v\n%s", err, stderr.Bytes())
		}
		t.Skipf("OpenAI Node SDK not installed: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

type sdkVerdict struct {
	Type   string `json:"type"`
	Object string `json:"object"`
	DataID string `json:"data_id"`
	ID     string `json:"id"`
	Error  string `json:"error"`
}

// The official OpenAI Node SDK, unchanged, manages an endpoint (create, retrieve, update,
// list with a cursor, delete, rotateSecret, test) and verifies with webhooks.unwrap what
// mediagen sent for a completed and a failed video; a delivery after a rotation that keeps the
// old secret verifies under both; after delete nothing more is sent (test/webhooks-sdk/webhooks.mjs).
func TestWebhooksOpenAINodeSDK(t *testing.T) {
	t.Parallel()
	sdkDir := webhooksSDK(t)
	rc := newHookReceiver(t, nil)
	mailbox := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		type req struct {
			Headers map[string]string `json:"headers"`
			Body    string            `json:"body"`
		}
		list := []req{}
		for _, got := range rc.requests() {
			h := map[string]string{}
			for k := range got.header {
				h[strings.ToLower(k)] = got.header.Get(k)
			}
			list = append(list, req{h, string(got.body)})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(mailbox.Close)
	e := startWebhookE2E(t, true, rc)
	script, err := filepath.Abs(filepath.Join("..", "..", "test", "webhooks-sdk", "webhooks.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The script is copied beside the SDK's node_modules so that `import 'openai'` finds it.
	run := filepath.Join(sdkDir, "webhooks-"+filepath.Base(t.TempDir())+".mjs")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, src, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(run) })
	cmd := exec.Command("node", run)
	cmd.Env = append(os.Environ(), "BASE_URL="+e.m.URL()+"/v1", "API_KEY="+e.key, "HOOK_URL="+rc.ts.URL+"/hook", "MAILBOX="+mailbox.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, stdout, stderr.Bytes())
	}
	var out struct {
		Created struct {
			Object     string   `json:"object"`
			HasSecret  bool     `json:"has_secret"`
			EventTypes []string `json:"event_types"`
		} `json:"created"`
		Videos struct {
			Done         string `json:"done"`
			Failed       string `json:"failed"`
			DoneStatus   string `json:"done_status"`
			FailedStatus string `json:"failed_status"`
		} `json:"videos"`
		Events      []sdkVerdict `json:"events"`
		WrongSecret sdkVerdict   `json:"wrong_secret"`
		Retrieved   struct {
			HasSecret bool `json:"has_secret"`
		} `json:"retrieved"`
		Updated struct {
			Name string `json:"name"`
		} `json:"updated"`
		Listed  []string `json:"listed"`
		Rotated struct {
			NewSecret bool `json:"new_secret"`
		} `json:"rotated"`
		Tested struct {
			Object     string `json:"object"`
			StatusCode int    `json:"status_code"`
			Success    bool   `json:"success"`
		} `json:"tested"`
		AfterRotation struct {
			Old, New sdkVerdict
		} `json:"after_rotation"`
		Deleted struct {
			Object  string `json:"object"`
			Deleted bool   `json:"deleted"`
		} `json:"deleted"`
		AfterDelete     int `json:"after_delete"`
		RetrieveDeleted any `json:"retrieve_deleted"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	t.Logf("SDK saw: %s", stdout)
	if out.Created.Object != "webhook_endpoint" || !out.Created.HasSecret || len(out.Created.EventTypes) != 2 {
		t.Errorf("create: %+v", out.Created)
	}
	videos := map[string]string{}
	for _, ev := range out.Events {
		if ev.Error != "" || ev.Object != "event" {
			t.Errorf("unwrap: %+v", ev)
		}
		videos[ev.DataID] = ev.Type
	}
	if videos[out.Videos.Done] != "video.completed" || videos[out.Videos.Failed] != "video.failed" ||
		out.Videos.DoneStatus != "completed" || out.Videos.FailedStatus != "failed" {
		t.Errorf("events %+v for videos %+v", out.Events, out.Videos)
	}
	if out.WrongSecret.Error != "InvalidWebhookSignatureError" {
		t.Errorf("unwrap with a wrong secret: %+v", out.WrongSecret)
	}
	if out.Retrieved.HasSecret || out.Updated.Name != "renamed" || len(out.Listed) != 2 {
		t.Errorf("retrieve %+v, update %+v, list %v", out.Retrieved, out.Updated, out.Listed)
	}
	if !out.Rotated.NewSecret || out.Tested.Object != "webhook_endpoint.test" || out.Tested.StatusCode != 200 || !out.Tested.Success {
		t.Errorf("rotate %+v, test %+v", out.Rotated, out.Tested)
	}
	if out.AfterRotation.Old.Error != "" || out.AfterRotation.New.Error != "" || out.AfterRotation.New.Type != "video.completed" {
		t.Errorf("after a rotation keeping the old secret: %+v", out.AfterRotation)
	}
	if !out.Deleted.Deleted || out.Deleted.Object != "webhook_endpoint.deleted" || out.AfterDelete != 3 || out.RetrieveDeleted != float64(404) {
		t.Errorf("delete %+v, requests after %d, retrieve %v", out.Deleted, out.AfterDelete, out.RetrieveDeleted)
	}
}
