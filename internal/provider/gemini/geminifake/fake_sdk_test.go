package geminifake

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// sdkClient is the official Go SDK, unchanged, in Gemini API mode against the fake.
func sdkClient(t *testing.T, s *Server, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPClient: s.TLSClient(), HTTPOptions: genai.HTTPOptions{BaseURL: s.Base() + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The SDK creates a video from text and a first frame, polls the operation until it is done
// and downloads the video with the key, and the fake sees nothing outside the format: the
// fake speaks the Gemini API as the SDK does.
func TestSDKGeneratesPollsAndDownloadsAgainstTheFake(t *testing.T) {
	s := Start(Config{Key: "k", Polls: 2})
	defer s.Close()
	c := sdkClient(t, s, "k")
	ctx := t.Context()
	dur := int32(8)
	png := []byte("\x89PNG\r\n\x1a\n fake frame")
	op, err := c.Models.GenerateVideos(ctx, "veo-3.0-generate-001", "a red kite over the sea",
		&genai.Image{ImageBytes: png, MIMEType: "image/png"},
		&genai.GenerateVideosConfig{NumberOfVideos: 1, DurationSeconds: &dur, AspectRatio: "16:9", Resolution: "1080p",
			NegativePrompt: "fog", PersonGeneration: "allow_adult"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(op.Name, "models/veo-3.0-generate-001/operations/") || op.Done {
		t.Fatalf("create answered %+v", op)
	}
	for i := 0; !op.Done; i++ {
		if i > 5 {
			t.Fatal("the operation never ended")
		}
		if op, err = c.Operations.GetVideosOperation(ctx, op, nil); err != nil {
			t.Fatal(err)
		}
	}
	if op.Error != nil || op.Response == nil || len(op.Response.GeneratedVideos) != 1 {
		t.Fatalf("done operation %+v", op)
	}
	data, err := c.Files.Download(ctx, genai.NewDownloadURIFromGeneratedVideo(op.Response.GeneratedVideos[0]), nil)
	if err != nil || !bytes.HasPrefix(data, []byte("fake mp4 ")) {
		t.Fatalf("download: %q, %v", data, err)
	}
	body := s.Body("a red kite over the sea")
	params, _ := body["parameters"].(map[string]any)
	if params["durationSeconds"] != 8.0 || params["resolution"] != "1080p" || params["sampleCount"] != 1.0 {
		t.Fatalf("the fake read parameters %v", params)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("the SDK's own requests broke the fake's format: %v", v)
	}
}

// What the fake answers as errors the SDK reads as the API's: a refused key, a refusal by
// the safety filter (no sample, raiMediaFilteredCount) and a failed operation.
func TestSDKReadsTheFakesRefusalsAsTheAPIs(t *testing.T) {
	s := Start(Config{Key: "k", End: func(p string) string { return p }})
	defer s.Close()
	ctx := t.Context()
	if _, err := sdkClient(t, s, "wrong").Models.GenerateVideos(ctx, "veo-2.0-generate-001", "x", nil, nil); err == nil {
		t.Fatal("a wrong key was accepted")
	} else if ae, ok := err.(genai.APIError); !ok || ae.Code != 403 || ae.Status != "PERMISSION_DENIED" {
		t.Fatalf("refused key read as %#v", err)
	}
	c := sdkClient(t, s, "k")
	op, err := c.Models.GenerateVideos(ctx, "veo-2.0-generate-001", EndRefuse, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	op = wait(t, c, op)
	if !op.Done || op.Response == nil || op.Response.RAIMediaFilteredCount != 1 || len(op.Response.GeneratedVideos) != 0 {
		t.Fatalf("filtered operation read as %+v", op)
	}
	op, err = c.Models.GenerateVideos(ctx, "veo-2.0-generate-001", EndFail, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	op = wait(t, c, op)
	if !op.Done || op.Error["status"] != "INVALID_ARGUMENT" {
		t.Fatalf("failed operation read as %+v", op)
	}
}

// The fake refuses, and records, what the API refuses: a Veo 2 duration on Veo 3, 1080p on
// Veo 2 or at 9:16, an unknown model.
func TestFakeRecordsCreatesOutsideTheModelsCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name, model string
		cfg         genai.GenerateVideosConfig
		violation   string
	}{
		{"5 s on Veo 3", "veo-3.0-generate-001", genai.GenerateVideosConfig{DurationSeconds: genai.Ptr[int32](5)}, "durationSeconds 5"},
		{"1080p on Veo 2", "veo-2.0-generate-001", genai.GenerateVideosConfig{Resolution: "1080p"}, `resolution "1080p"`},
		{"1080p at 9:16", "veo-3.0-generate-001", genai.GenerateVideosConfig{Resolution: "1080p", AspectRatio: "9:16"}, "1080p at 9:16"},
		{"an unknown model", "veo-9", genai.GenerateVideosConfig{}, `model "veo-9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(Config{Key: "k"})
			defer s.Close()
			_, err := sdkClient(t, s, "k").Models.GenerateVideos(t.Context(), tc.model, "p", nil, &tc.cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			if v := s.Violations(); len(v) != 1 || !strings.Contains(v[0], tc.violation) || s.Jobs() != 0 {
				t.Fatalf("violations %v jobs %d, want %q", v, s.Jobs(), tc.violation)
			}
		})
	}
}

// wait polls an operation with the SDK until it is done.
func wait(t *testing.T, c *genai.Client, op *genai.GenerateVideosOperation) *genai.GenerateVideosOperation {
	t.Helper()
	for i := 0; !op.Done; i++ {
		if i > 5 {
			t.Fatal("the operation never ended")
		}
		var err error
		if op, err = c.Operations.GetVideosOperation(t.Context(), op, nil); err != nil {
			t.Fatal(err)
		}
	}
	return op
}
