package vertexfake

import (
	"bytes"
	"strings"
	"testing"

	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"google.golang.org/genai"
)

// sdkClient is the official Go SDK, unchanged, in Vertex AI mode against the fake, with
// Google's own auth library reading the fake's service-account key file and exchanging its
// JWT at the key's token_uri, as the SDK does in production (client.go: credentials →
// httptransport.NewClient).
func sdkClient(t *testing.T, s *Server, key []byte, version string) *genai.Client {
	t.Helper()
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, key, &credentials.DetectOptions{
		Scopes: []string{Scope}, Client: s.TLSClient()})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := httptransport.NewClient(&httptransport.Options{Credentials: creds, BaseRoundTripper: s.TLSClient().Transport})
	if err != nil {
		t.Fatal(err)
	}
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{Backend: genai.BackendVertexAI, Project: Project, Location: Location,
		HTTPClient: hc, HTTPOptions: genai.HTTPOptions{BaseURL: s.Base() + "/", APIVersion: version}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The SDK creates a video from text and a first frame, polls the operation with
// fetchPredictOperation until it is done and reads the video's inline bytes, on the
// reference's v1 and on the SDK's default v1beta1, and the fake sees nothing outside the
// format: the fake speaks Vertex AI as the SDK does, and its token endpoint as Google's auth
// library does.
func TestSDKGeneratesAndPollsAgainstTheFake(t *testing.T) {
	for _, version := range []string{"v1", ""} { // "": the SDK's default, v1beta1
		t.Run("version "+max(version, "default"), func(t *testing.T) {
			s := Start(Config{Polls: 2})
			defer s.Close()
			c := sdkClient(t, s, s.KeyJSON(), version)
			ctx := t.Context()
			dur := int32(8)
			audio := true
			png := []byte("\x89PNG\r\n\x1a\n fake frame")
			op, err := c.Models.GenerateVideos(ctx, "veo-3.0-generate-001", "a red kite over the sea",
				&genai.Image{ImageBytes: png, MIMEType: "image/png"},
				&genai.GenerateVideosConfig{NumberOfVideos: 1, DurationSeconds: &dur, AspectRatio: "16:9", Resolution: "1080p",
					NegativePrompt: "fog", PersonGeneration: "allow_adult", GenerateAudio: &audio, Seed: genai.Ptr[int32](7)})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(op.Name, "projects/"+Project+"/locations/"+Location+"/publishers/google/models/veo-3.0-generate-001/operations/") || op.Done {
				t.Fatalf("create answered %+v", op)
			}
			op = wait(t, c, op)
			if op.Error != nil || op.Response == nil || len(op.Response.GeneratedVideos) != 1 {
				t.Fatalf("done operation %+v", op)
			}
			v := op.Response.GeneratedVideos[0].Video
			if v == nil || !bytes.HasPrefix(v.VideoBytes, []byte("fake mp4 ")) || v.MIMEType != "video/mp4" {
				t.Fatalf("video %+v", v)
			}
			params, _ := s.Body("a red kite over the sea")["parameters"].(map[string]any)
			if params["durationSeconds"] != 8.0 || params["resolution"] != "1080p" || params["sampleCount"] != 1.0 || params["generateAudio"] != true {
				t.Fatalf("the fake read parameters %v", params)
			}
			if v := s.Violations(); len(v) != 0 {
				t.Fatalf("the SDK's own requests broke the fake's format: %v", v)
			}
			if s.TokensIssued() != 1 {
				t.Fatalf("tokens issued %d", s.TokensIssued())
			}
		})
	}
}

// What the fake answers as errors the SDK reads as the API's: a key the token endpoint does
// not know, a refusal by the safety filter (no video, raiMediaFilteredCount) and a failed
// operation.
func TestSDKReadsTheFakesRefusalsAsTheAPIs(t *testing.T) {
	s := Start(Config{End: func(p string) string { return p }})
	defer s.Close()
	ctx := t.Context()
	if _, err := sdkClient(t, s, s.OtherKeyJSON(), "v1").Models.GenerateVideos(ctx, "veo-2.0-generate-001", "x", nil, nil); err == nil ||
		!strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("an unknown key: %v", err)
	}
	c := sdkClient(t, s, s.KeyJSON(), "v1")
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
	s.ExpireTokens()
	if _, err := c.Models.GenerateVideos(ctx, "veo-2.0-generate-001", "after", nil, nil); err == nil {
		t.Fatal("a revoked token was accepted")
	} else if ae, ok := err.(genai.APIError); !ok || ae.Code != 401 || ae.Status != "UNAUTHENTICATED" {
		t.Fatalf("revoked token read as %#v", err)
	}
}

// The fake refuses, and records, what the API refuses: a Veo 2 duration on Veo 3, 1080p on
// Veo 2 or at 9:16, Veo 3 without generateAudio, sound on Veo 2, an unknown model.
func TestFakeRecordsCreatesOutsideTheModelsCapabilities(t *testing.T) {
	on := genai.Ptr(true)
	for _, tc := range []struct {
		name, model string
		cfg         genai.GenerateVideosConfig
		violation   string
	}{
		{"5 s on Veo 3", "veo-3.0-generate-001", genai.GenerateVideosConfig{DurationSeconds: genai.Ptr[int32](5), GenerateAudio: on}, "durationSeconds 5"},
		{"1080p on Veo 2", "veo-2.0-generate-001", genai.GenerateVideosConfig{Resolution: "1080p"}, `resolution "1080p"`},
		{"1080p at 9:16", "veo-3.0-generate-001", genai.GenerateVideosConfig{Resolution: "1080p", AspectRatio: "9:16", GenerateAudio: on}, "1080p at 9:16"},
		{"Veo 3 without generateAudio", "veo-3.0-generate-001", genai.GenerateVideosConfig{}, "no generateAudio"},
		{"sound on Veo 2", "veo-2.0-generate-001", genai.GenerateVideosConfig{GenerateAudio: on}, "generateAudio true"},
		{"an unknown model", "veo-9", genai.GenerateVideosConfig{}, `model "veo-9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(Config{})
			defer s.Close()
			_, err := sdkClient(t, s, s.KeyJSON(), "v1").Models.GenerateVideos(t.Context(), tc.model, "p", nil, &tc.cfg)
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

// The SDK's outputGcsUri is the fake's storageUri: the finished operation names the video in
// the bucket (gcsUri, the SDK's Video.URI) instead of carrying it, and the object is there.
func TestSDKWritesToABucketOnTheFake(t *testing.T) {
	s := Start(Config{})
	defer s.Close()
	c := sdkClient(t, s, s.KeyJSON(), "v1")
	op, err := c.Models.GenerateVideos(t.Context(), "veo-2.0-generate-001", "to a bucket", nil,
		&genai.GenerateVideosConfig{OutputGCSURI: "gs://mediagen-veo/out/", DurationSeconds: genai.Ptr[int32](6)})
	if err != nil {
		t.Fatal(err)
	}
	op = wait(t, c, op)
	if op.Response == nil || len(op.Response.GeneratedVideos) != 1 || op.Response.GeneratedVideos[0].Video == nil ||
		!strings.HasPrefix(op.Response.GeneratedVideos[0].Video.URI, "gs://mediagen-veo/out/") || len(op.Response.GeneratedVideos[0].Video.VideoBytes) != 0 {
		t.Fatalf("operation %+v", op)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}
