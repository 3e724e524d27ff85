//lint:file-ignore SA1019 the SDK marks its video methods deprecated (OpenAI shuts its own Sora API down); they are exactly what clients of this service call.

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
)

// input_reference's object form, {"image_url": "https://..."}, is the first frame by URL:
// sent as JSON and by the Go SDK (which sends it as the multipart field
// input_reference[image_url]), the task completes from that frame; file_id is a 400 on
// input_reference that says to upload the file instead, with nothing written.
func TestOpenAIInputReferenceImageURLIsTheFirstFrame(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	client := sdkClient(e)
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(e.mediaDir(), "frame.png"), pngOf(t, 128, 72), 0o644); err != nil {
		t.Fatal(err)
	}
	frameURL := e.media.URL + "/frame.png"

	id := e.create(`{"model":"demo-video-fast","prompt":"the frame comes alive","seconds":"4","size":"1280x720","input_reference":{"image_url":"` + frameURL + `"}}`)
	if task := e.wait(id); task.Status != "completed" {
		t.Fatalf("JSON image_url task: %+v", task)
	}

	v, err := client.Videos.New(ctx, openai.VideoNewParams{Model: "demo-video-fast", Prompt: "the frame comes alive",
		Seconds: openai.VideoSeconds4, Size: openai.VideoSize1280x720,
		InputReference: openai.VideoNewParamsInputReferenceUnion{OfImageInputReference: &openai.ImageInputReferenceParam{ImageURL: openai.String(frameURL)}}})
	if err != nil {
		t.Fatal(err)
	}
	if task := e.wait(v.ID); task.Status != "completed" {
		t.Fatalf("SDK image_url task: %+v", task)
	}

	available, used := e.balance()
	refusals := []struct {
		name string
		ref  openai.ImageInputReferenceParam
		msg  string
	}{
		{"file_id", openai.ImageInputReferenceParam{FileID: openai.String("file_abc")}, "file_id is not supported"},
		{"image_url not a URL the contract takes", openai.ImageInputReferenceParam{ImageURL: openai.String("ftp://media.example/a.png")}, ""},
	}
	for _, c := range refusals {
		_, err := client.Videos.New(ctx, openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: openai.VideoSeconds4,
			InputReference: openai.VideoNewParamsInputReferenceUnion{OfImageInputReference: &c.ref}})
		apiErr := sdkError(t, err)
		if apiErr.StatusCode != 400 || apiErr.Param != "input_reference" || !strings.Contains(apiErr.Message, c.msg) {
			t.Errorf("%s: %d %s %q, want 400 on input_reference", c.name, apiErr.StatusCode, apiErr.Param, apiErr.Message)
		}
	}
	if status, b := e.call("POST", "/v1/videos", `{"model":"demo-video-fast","prompt":"p","input_reference":{"file_id":"file_abc"}}`); status != 400 ||
		!strings.Contains(string(b), `"param":"input_reference"`) || !strings.Contains(string(b), "Upload the image") {
		t.Errorf("JSON file_id: %d %s", status, b)
	}
	if a, u := e.balance(); a != available || u != used {
		t.Errorf("refusals moved the balance: %s/%s → %s/%s", available, used, a, u)
	}
}
