//lint:file-ignore SA1019 the SDK marks its video methods deprecated (OpenAI shuts its own Sora API down); they are exactly what clients of this service call.

package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"mediagen/internal/apidoc"
	"mediagen/internal/httpapi"
)

// sdkClient is the official OpenAI Go SDK pointed at the started service, with the demo key.
// Every exchange it makes is checked against docs/openapi.yaml.
func sdkClient(e *e2e) openai.Client {
	rec := &apidoc.Transport{Record: func(ex apidoc.Exchange) {
		// The oversize upload is the one exchange too large to record whole.
		if !ex.Truncated {
			checkAgainstOpenAPI(e.t, ex)
		}
	}}
	return openai.NewClient(option.WithBaseURL(e.baseURL()+"/v1/"), option.WithAPIKey(e.key), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: rec}))
}

// uploads lists the stored input_reference files under the data directory.
func (e *e2e) uploads() []string {
	e.t.Helper()
	var found []string
	_ = filepath.WalkDir(e.m.Config.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(path), "/"+httpapi.UploadKeyPrefix) {
			found = append(found, path)
		}
		return nil
	})
	return found
}

// The official SDK's typed create works against the service in OpenAI's request shape:
// model, prompt, seconds and size (sent as multipart, as the SDK always does), then with an
// input_reference image as the first frame, and through NewAndPoll; each task completes with
// the contract's answer and the upload is kept for the task.
func TestOpenAISDKCreatesNativeVideos(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, e *e2e) {
		client := sdkClient(e)
		ctx := context.Background()

		v, err := client.Videos.New(ctx, openai.VideoNewParams{Model: "demo-video-fast", Prompt: "a paper boat on a pond",
			Seconds: openai.VideoSeconds4, Size: openai.VideoSize1280x720})
		if err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || v.Object != "video" || v.Model != "demo-video-fast" || v.Status != openai.VideoStatusQueued {
			t.Fatalf("create answer: %+v", v)
		}
		done := e.wait(v.ID)
		if done.Status != "completed" {
			t.Fatalf("task: %+v", done)
		}
		// size 1280x720 became 720p at 16:9: the sandbox renders exactly that.
		if _, info := e.download(done.Metadata.URL, "sdk.mp4"); info.Width != 1280 || info.Height != 720 {
			t.Errorf("output %dx%d, want 1280x720", info.Width, info.Height)
		}
		got, err := client.Videos.Get(ctx, v.ID)
		if err != nil || got.Status != openai.VideoStatusCompleted || got.Progress != 100 {
			t.Fatalf("Get: %+v %v", got, err)
		}

		frame := pngOf(t, 128, 72)
		withRef, err := client.Videos.New(ctx, openai.VideoNewParams{Model: "demo-video-fast", Prompt: "the frame comes alive",
			Seconds: openai.VideoSeconds4, Size: openai.VideoSize720x1280,
			InputReference: openai.VideoNewParamsInputReferenceUnion{OfFile: openai.File(bytes.NewReader(frame), "frame.png", "image/png")}})
		if err != nil {
			var apiErr *openai.Error
			if errors.As(err, &apiErr) {
				t.Fatal(apiErr.Param, apiErr.Message)
			}
			t.Fatal(err)
		}
		if n := len(e.uploads()); n != 1 {
			t.Fatalf("%d stored uploads, want 1", n)
		}
		if done := e.wait(withRef.ID); done.Status != "completed" {
			t.Fatalf("first-frame task: %+v", done)
		}

		// The JSON variant of OpenAI's shape, through the recorded exchange check.
		if id := e.create(`{"model":"demo-video-fast","prompt":"a lantern","seconds":"4","size":"720x1280"}`); e.wait(id).Status != "completed" {
			t.Fatal("JSON-shaped task did not complete")
		}

		polled, err := client.Videos.NewAndPoll(ctx, openai.VideoNewParams{Model: "demo-video-fast", Prompt: "a kite",
			Seconds: openai.VideoSeconds8, Size: openai.VideoSize1280x720}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if polled.Status != openai.VideoStatusCompleted {
			t.Fatalf("NewAndPoll: %+v", polled)
		}
	})
}

// endless is a PNG header followed by bytes that never end.
type endless struct{ sent bool }

func (r *endless) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		return copy(p, pngHeader), nil
	}
	for i := range p {
		p[i] = 0x42
	}
	return len(p), nil
}

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00")

// Requests in OpenAI's shape that cannot be mapped or whose upload is refused are 400s naming
// the OpenAI field, with nothing written: no task, no reservation, no stored upload.
func TestOpenAISDKRefusalsWriteNothing(t *testing.T) {
	t.Parallel()
	onBothStores(t, func(t *testing.T, e *e2e) {
		client := sdkClient(e)
		ctx := context.Background()
		available, used := e.balance()
		file := func(r io.Reader, name string) openai.VideoNewParamsInputReferenceUnion {
			return openai.VideoNewParamsInputReferenceUnion{OfFile: openai.File(r, name, "image/png")}
		}
		cases := []struct {
			name  string
			req   openai.VideoNewParams
			param string
		}{
			{"size with no native mapping", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Size: openai.VideoSize1792x1024}, "size"},
			{"size at a resolution the alias lacks", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Size: "1920x1080"}, "size"},
			{"seconds not a number", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: "four"}, "seconds"},
			{"seconds outside the family's durations", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: "2"}, "seconds"},
			{"upload not an image", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: "4",
				InputReference: file(strings.NewReader("this is plain text, not an image at all"), "x.png")}, "input_reference"},
			{"upload a corrupt PNG", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: "4",
				InputReference: file(bytes.NewReader(pngHeader[:12]), "x.png")}, "input_reference"},
			{"upload beyond the bound", openai.VideoNewParams{Model: "demo-video-fast", Prompt: "p", Seconds: "4",
				InputReference: file(io.LimitReader(&endless{}, httpapi.DefaultMaxUploadBytes+1<<20), "big.png")}, "input_reference"},
			{"not a native alias", openai.VideoNewParams{Model: "demo-production-standard", Prompt: "p", Seconds: "4"}, "model"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := client.Videos.New(ctx, c.req)
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != c.param {
					t.Fatalf("got %v, want a 400 on %s", err, c.param)
				}
			})
		}
		// Multipart bodies the SDK would not send: a second file (the first one already stored
		// is deleted), an unknown form field, a file in a text field.
		png := pngOf(t, 32, 18)
		for _, c := range []struct {
			name, param string
			parts       func(mw *multipart.Writer)
		}{
			{"second file", "input_reference", func(mw *multipart.Writer) {
				for range 2 {
					fw, _ := mw.CreateFormFile("input_reference", "f.png")
					fw.Write(png)
				}
			}},
			{"unknown field", "quality", func(mw *multipart.Writer) { mw.WriteField("quality", "high") }},
			{"file as prompt", "prompt", func(mw *multipart.Writer) {
				fw, _ := mw.CreateFormFile("prompt", "p.txt")
				fw.Write([]byte("hello"))
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				var body bytes.Buffer
				mw := multipart.NewWriter(&body)
				mw.WriteField("model", "demo-video-fast")
				mw.WriteField("seconds", "4")
				c.parts(mw)
				mw.Close()
				req, _ := http.NewRequest("POST", e.baseURL()+"/v1/videos", &body)
				req.Header.Set("Authorization", "Bearer "+e.key)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 400 || !strings.Contains(string(b), `"param":"`+c.param+`"`) {
					t.Fatalf("%d %s, want 400 on %s", res.StatusCode, b, c.param)
				}
			})
		}
		if a, u := e.balance(); a != available || u != used {
			t.Errorf("balance moved: %s/%s → %s/%s", available, used, a, u)
		}
		if status, b := e.call("GET", "/v1/videos", ""); status != 200 || !strings.Contains(string(b), `"data":[]`) {
			t.Errorf("tasks were written: %d %s", status, b)
		}
		if left := e.uploads(); len(left) != 0 {
			t.Errorf("stray uploads: %v", left)
		}
	})
}
