package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

// stubService stands in for a running mediagen so that the examples run anywhere; against
// the real service use its address, e.g. os.Getenv("MEDIAGEN_BASE_URL").
func stubService() *httptest.Server {
	polls := 0
	mux := http.NewServeMux()
	var srv *httptest.Server
	mux.HandleFunc("POST /v1/videos", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"duration":2`) {
			w.Header().Set("X-Request-Id", "req_7")
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"metadata.duration must be -1 or between 4 and 30","type":"invalid_request_error","code":"invalid_request_error","param":"metadata.duration"}}`)
			return
		}
		w.WriteHeader(202)
		io.WriteString(w, `{"id":"video_123","task_id":"video_123","object":"video","model":"demo-video-fast","status":"queued","progress":0}`)
	})
	mux.HandleFunc("GET /v1/videos/{id}", func(w http.ResponseWriter, r *http.Request) {
		if polls++; polls < 2 {
			io.WriteString(w, `{"id":"video_123","task_id":"video_123","object":"video","model":"demo-video-fast","status":"in_progress","progress":50}`)
			return
		}
		io.WriteString(w, `{"id":"video_123","task_id":"video_123","object":"video","model":"demo-video-fast","status":"completed","progress":100,`+
			`"metadata":{"url":"`+srv.URL+`/v1/files/video_123.mp4"},"usage":{"completion_tokens":48038,"total_tokens":48038}}`)
	})
	mux.HandleFunc("GET /v1/files/", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "video.mp4", time.Unix(0, 0), strings.NewReader(strings.Repeat("x", 4096)))
	})
	mux.HandleFunc("POST /v1/audio/speech", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"id":"speech_1","object":"audio.speech","created":1,"model":"demo-speech","url":"`+srv.URL+`/v1/files/speech_1.mp3",`+
			`"url_expires_at":2,"duration":2.664,"original_duration":2.664,"usage":{"type":"seconds","duration":2.664,"original_duration":2.664}}`)
	})
	mux.HandleFunc("GET /v1/billing/balance", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"billing.balance","currency":"USD","balance":{"available":99.5,"used":0.5,"unlimited":false},"updated_at":1}`)
	})
	mux.HandleFunc("POST /v1/vidgen/virtual/asset-groups/create", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Id":"grp_1","Name":"Brand","Origin":"Tenant","Status":"Active","AssetCount":0,"CreatedAt":1,"UpdatedAt":1}`)
	})
	mux.HandleFunc("POST /v1/vidgen/virtual/assets/create", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
		io.WriteString(w, `{"Id":"asset_1","Status":"Processing"}`)
	})
	mux.HandleFunc("POST /v1/vidgen/virtual/assets/get", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"Id":"asset_1","GroupId":"grp_1","AssetType":"Video","Name":"clip","Status":"Active","Duration":5,"CreatedAt":1,"UpdatedAt":1}`)
	})
	srv = httptest.NewServer(mux)
	return srv
}

// Create a native video task, wait for it and store the result.
func Example() {
	svc := stubService()
	defer svc.Close()
	ctx := context.Background()
	// PollInterval: 30 s by default (the contract's minimum); shorter only for the sandbox.
	c, err := client.New(svc.URL, "mg_your_key", client.Options{PollInterval: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}
	req := &client.NativeRequest{
		Model:  "demo-video-fast",
		Prompt: "a paper boat on a pond at dawn",
		Metadata: client.NativeMetadata{
			Duration: client.Int(5), Resolution: "480p", Ratio: "16:9", GenerateAudio: client.Bool(true),
		},
	}
	task, err := c.CreateVideo(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	// Keep both: after a crash, resume with Wait(ctx, task.ID); never create again.
	fmt.Println("accepted", task.ID, task.Status, "request id generated:", req.Metadata.ClientRequestID != "")
	done, err := c.Wait(ctx, task.ID, func(v *client.Video) { fmt.Println("progress", v.Progress) })
	if err != nil {
		log.Fatal(err)
	}
	dst := filepath.Join(os.TempDir(), "mediagen-example.mp4")
	n, err := c.DownloadFile(ctx, done.ResultURL(), dst, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(dst)
	fmt.Println(done.Status, "tokens", done.Usage.CompletionTokens, "bytes", n)
	// Output:
	// accepted video_123 queued request id generated: true
	// progress 50
	// progress 100
	// completed tokens 48038 bytes 4096
}

// Resume waiting after a restart: all it takes is the task id you stored.
func ExampleClient_Wait() {
	svc := stubService()
	defer svc.Close()
	c, _ := client.New(svc.URL, "mg_your_key", client.Options{PollInterval: 10 * time.Millisecond})
	done, err := c.Wait(context.Background(), "video_123", nil)
	var failed *client.TaskError
	switch {
	case errors.As(err, &failed):
		fmt.Println("task failed:", failed.Code) // e.g. InvalidParameter.TaskTypeMismatch
	case err != nil:
		fmt.Println("could not wait:", err) // the task may still be running: wait again later
	default:
		fmt.Println(done.ID, done.Status)
	}
	// Output: video_123 completed
}

// API errors are *client.Error values: branch on Code and Param, quote RequestID.
func ExampleError() {
	svc := stubService()
	defer svc.Close()
	c, _ := client.New(svc.URL, "mg_your_key", client.Options{})
	_, err := c.CreateVideo(context.Background(), &client.NativeRequest{Model: "demo-video-fast", Prompt: "x",
		Metadata: client.NativeMetadata{Duration: client.Int(2)}})
	var apiErr *client.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Type, apiErr.Param, apiErr.RequestID)
	}
	// Output: 400 invalid_request_error metadata.duration req_7
}

// Standalone enhancement: the result is read with ResultURL (metadata.video_url on this route).
func ExampleEnhancementRequest() {
	req := &client.EnhancementRequest{Model: "demo-enhance", Metadata: client.EnhancementMetadata{
		VideoURL: "https://cdn.example/clip.mp4", Duration: 5.084, ToolVersion: "professional",
		Resolution: "4k", FPS: client.Int(60), BitDepth: client.Int(10),
	}}
	fmt.Println(req.Metadata.Resolution, *req.Metadata.FPS)
	// Output: 4k 60
}

// Speech answers at once with a temporary link; copy the audio to keep it.
func ExampleClient_CreateSpeech() {
	svc := stubService()
	defer svc.Close()
	c, _ := client.New(svc.URL, "mg_your_key", client.Options{})
	s, err := c.CreateSpeech(context.Background(), &client.SpeechRequest{Model: "demo-speech",
		Input: "Your order has shipped.", Instructions: "Warm, medium pace."})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Object, s.Usage.Duration, s.Usage.Type)
	// Output: audio.speech 2.664 seconds
}

// The balance of the key.
func ExampleClient_Balance() {
	svc := stubService()
	defer svc.Close()
	c, _ := client.New(svc.URL, "mg_your_key", client.Options{})
	b, _ := c.Balance(context.Background())
	fmt.Println(b.Currency, b.Balance.Available, b.Balance.Used)
	// Output: USD 99.5 0.5
}

// Register a video in the virtual library and use it in a production request.
func ExampleLibrary_WaitAsset() {
	svc := stubService()
	defer svc.Close()
	ctx := context.Background()
	c, _ := client.New(svc.URL, "mg_your_key", client.Options{})
	lib := c.Virtual()
	g, _ := lib.CreateGroup(ctx, "Brand", "")
	a, _ := lib.CreateAsset(ctx, client.NewAsset{GroupID: g.ID, URL: "https://cdn.example/clip.mp4", AssetType: client.AssetVideo, Name: "clip"})
	a, err := lib.WaitAsset(ctx, a.ID, 10*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	req := &client.ProductionRequest{Model: "demo-production-lite", Prompt: "extend @Video1",
		Metadata: client.ProductionMetadata{Resolution: "1080p", OmniReferenceTaskType: "extend",
			Content: []client.ContentItem{client.ReferenceVideo(a.URI())}}}
	fmt.Println(a.Status, a.Duration, req.Metadata.Content[0].VideoURL.URL)
	// Output: Active 5 asset://asset_1
}

// The walk-through of docs/clients.md: create, wait, tell a failed task apart, download.
// (Compiled, not run: it talks to the service at MEDIAGEN_BASE_URL.)
func ExampleClient_CreateVideo() {
	ctx := context.Background()
	c, err := client.New(os.Getenv("MEDIAGEN_BASE_URL"), os.Getenv("MEDIAGEN_API_KEY"), client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	req := &client.NativeRequest{Model: "demo-video-fast", Prompt: "a paper boat on a pond at dawn",
		Metadata: client.NativeMetadata{Duration: client.Int(5), Resolution: "720p", GenerateAudio: client.Bool(true)}}
	task, err := c.CreateVideo(ctx, req) // req.Metadata.ClientRequestID is now set: store it with task.ID
	if err != nil {
		log.Fatal(err)
	}
	done, err := c.Wait(ctx, task.ID, func(v *client.Video) { log.Println(v.Status, v.Progress) })
	var failed *client.TaskError
	if errors.As(err, &failed) {
		// failed.Code: video_generation_failed, InvalidParameter.TaskTypeMismatch, …
		log.Fatal(failed.Code)
	}
	if err != nil {
		log.Fatal(err)
	}
	n, err := c.DownloadFile(ctx, done.ResultURL(), "result.mp4", func(got, total int64) {})
	if err != nil {
		log.Fatal(err)
	}
	log.Println("saved", n, "bytes")
}
