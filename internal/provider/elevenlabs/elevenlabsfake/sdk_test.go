package elevenlabsfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
)

// elevenlabsSDK is the directory whose node_modules holds the ElevenLabs Node SDK pinned by
// test/elevenlabs-sdk/package-lock.json: MEDIAGEN_TEST_ELEVENLABS_SDK when make test set it,
// else what scripts/ensure-elevenlabs-sdk.sh installs. Under CI=true a missing Node.js or SDK
// fails the test; elsewhere the test skips when node or npm is not on the machine.
func elevenlabsSDK(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("MEDIAGEN_TEST_ELEVENLABS_SDK"); dir != "" {
		return dir
	}
	ci := os.Getenv("CI") == "true"
	if !ci {
		for _, tool := range []string{"node", "npm"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s not on PATH (scripts/ensure-elevenlabs-sdk.sh installs it)", tool)
			}
		}
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join("..", "..", "..", "..", "scripts", "ensure-elevenlabs-sdk.sh"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ci {
			t.Fatalf("ElevenLabs SDK required under CI=true: %v\n%s", err, stderr.Bytes())
		}
		t.Skipf("ElevenLabs SDK not installed: %v\n%s", err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// The official Node SDK, unchanged, speaks to the fake: its convert call (voice in the path,
// output_format in the query, text, model_id, voice_settings and seed in the JSON body, the
// key in xi-api-key) is answered with the audio and ElevenLabs' request-id and
// x-character-count headers, its models list parses, and a refused key reaches it as an
// ElevenLabsError with status 401 and the API's detail.status — with no wire-format violation.
func TestElevenLabsNodeSDK(t *testing.T) {
	t.Parallel()
	sdk := elevenlabsSDK(t)
	dir := t.TempDir()
	mp3 := filepath.Join(dir, "s.mp3")
	if err := os.WriteFile(mp3, []byte("ID3 sdk audio bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := elevenlabsfake.Start(elevenlabsfake.Config{Key: "xi-sdk-key", Voices: []string{"JBFqnCBsd6RMkjVDRZzb"}, Speech: mp3})
	t.Cleanup(f.Close)
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "test", "elevenlabs-sdk", "speech.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// The script runs from a copy beside the SDK's node_modules, where its import resolves.
	run := filepath.Join(sdk, "speech-"+filepath.Base(dir)+".mjs")
	src, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, src, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(run) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", run, f.Base(), "xi-sdk-key", "JBFqnCBsd6RMkjVDRZzb")
	cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+ca, "ELEVENLABS_API_KEY=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.Bytes())
	}
	var got struct {
		Bytes       int      `json:"bytes"`
		Head        string   `json:"head"`
		ContentType string   `json:"contentType"`
		RequestID   string   `json:"requestId"`
		Characters  string   `json:"characters"`
		Models      []string `json:"models"`
		Refused     *struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		} `json:"refused"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got.Bytes != len("ID3 sdk audio bytes") || got.Head != "ID3" || got.ContentType != "audio/mpeg" || got.RequestID == "" || got.Characters != "28" {
		t.Errorf("convert: %+v", got)
	}
	if !slices.Contains(got.Models, "eleven_multilingual_v2") {
		t.Errorf("models %v", got.Models)
	}
	if got.Refused == nil || got.Refused.Status != 401 || got.Refused.Detail != "invalid_api_key" {
		t.Errorf("a refused key: %+v", got.Refused)
	}
	bodies := f.Bodies()
	if len(bodies) != 1 {
		t.Fatalf("syntheses received %v, want the SDK's one", bodies)
	}
	b := bodies[0]
	vs, _ := b["voice_settings"].(map[string]any)
	if b["text"] != "Hello from the official SDK." || b["model_id"] != "eleven_multilingual_v2" || b["seed"] != float64(42) ||
		vs["stability"] != 0.5 || vs["similarity_boost"] != 0.75 {
		t.Errorf("the SDK's body %v", b)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Errorf("the SDK broke the fake's wire format: %v", v)
	}
}
