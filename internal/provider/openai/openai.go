// Package openai is the upstream adapter of OpenAI-compatible APIs, which OpenAI and many
// providers and self-hosted servers speak: video generation (POST {base}/videos as
// multipart/form-data, GET {base}/videos/{id}, GET {base}/videos/{id}/content) and speech
// (POST {base}/audio/speech). The wire format is the official SDK's
// (github.com/openai/openai-go/v3: VideoNewParams, Video, AudioSpeechNewParams), called as
// typed REST of our own: the SDK retries failed calls twice by default, and a retried create
// starts a second paid job. docs/upstreams.md#openai describes the mapping.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// DefaultVoice is the voice of speech when the account names none.
const DefaultVoice = "alloy"

// maxSpeechBytes bounds the audio of one speech answer (MP3 at 128 kbit/s: over half an hour).
const maxSpeechBytes = 32 << 20

// Config configures a Client.
type Config struct {
	BaseURL string // e.g. https://api.openai.com/v1
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
	// Voice is the speech voice (default DefaultVoice).
	Voice string
	// Frames fits a first-frame image to a size the videos API takes (optional). Without it
	// the image's URL is passed as input_reference[image_url] with the request's size.
	Frames Frames
}

// Frames makes a first frame the videos API accepts: the API takes an input_reference only
// at the output size, so the image is scaled and padded to 1280x720 (landscape) or 720x1280.
type Frames interface {
	Fit(ctx context.Context, src provider.Source) (png []byte, width, height int, err error)
}

// Client calls one OpenAI-compatible account.
type Client struct {
	api    *rest.Client
	voice  string
	frames Frames
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "openai", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	voice := cfg.Voice
	if voice == "" {
		voice = DefaultVoice
	}
	return &Client{api: api, voice: voice, frames: cfg.Frames}, nil
}

// video is the Video object of GET /videos/{id} (and of the create's answer).
type video struct {
	ID       string `json:"id"`
	Status   string `json:"status"` // queued, in_progress, completed, failed
	Progress int    `json:"progress"`
	Error    *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errorBody is the API's error envelope.
type errorBody struct {
	Error struct {
		Code string `json:"code"`
		Type string `json:"type"`
	} `json:"error"`
}

// createForm builds the multipart body of POST /videos: prompt, model, seconds, size, and a
// first frame — fitted to the output size and uploaded as the input_reference file, or, with
// no Frames, its URL as input_reference[image_url] (the SDK's ImageInputReferenceParam in
// its bracket form encoding).
func (c *Client) createForm(ctx context.Context, r provider.GenerateRequest) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	size := ""
	if r.Width > 0 && r.Height > 0 {
		size = fmt.Sprintf("%dx%d", r.Width, r.Height)
	}
	var frame *provider.Input
	for i, in := range r.Inputs {
		if in.Type == "image_url" && in.Role == "first_frame" {
			frame = &r.Inputs[i]
		}
	}
	var png []byte
	if frame != nil && c.frames != nil {
		b, fw, fh, err := c.frames.Fit(ctx, frame.Source)
		var pe *provider.Error
		if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
			// An image that can never be fitted (over the pixel budget): failing now beats
			// spending the task's attempts on it.
			return nil, "", pe
		}
		if err != nil {
			return nil, "", fmt.Errorf("openai: first frame: %v: %w", err, provider.ErrTransient)
		}
		png, size = b, fmt.Sprintf("%dx%d", fw, fh)
	}
	fields := [][2]string{{"prompt", r.Prompt}, {"model", r.Model}}
	if r.Duration > 0 {
		fields = append(fields, [2]string{"seconds", strconv.Itoa(r.Duration)})
	}
	if size != "" {
		fields = append(fields, [2]string{"size", size})
	}
	if frame != nil && png == nil {
		fields = append(fields, [2]string{"input_reference[image_url]", frame.Source.URL})
	}
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	if png != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="input_reference"; filename="first_frame.png"`)
		h.Set("Content-Type", "image/png")
		part, err := w.CreatePart(h)
		if err != nil {
			return nil, "", err
		}
		if _, err := part.Write(png); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

// SubmitGeneration creates a video job, once. The Idempotency-Key header carries the task's
// half: servers that honour it answer a repeated create with the first job.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	body, ct, err := c.createForm(ctx, r)
	if err != nil {
		return "", err
	}
	req := rest.Request{Method: http.MethodPost, Path: "/videos", Body: bytes.NewReader(body), ContentType: ct}
	if r.IdempotencyKey != "" {
		req.Header = map[string]string{"Idempotency-Key": r.IdempotencyKey}
	}
	var v video
	if err := c.call(ctx, req, &v, videoRefusal); err != nil {
		return "", err
	}
	if v.ID == "" {
		return "", fmt.Errorf("openai: create answered without a video id: %w", provider.ErrTransient)
	}
	return v.ID, nil
}

// PollGeneration reads a video job and maps its state. A completed job's output is streamed
// from GET /videos/{id}/content, which needs the account's key.
func (c *Client) PollGeneration(ctx context.Context, id string) (provider.Job, error) {
	var v video
	if err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/videos/" + url.PathEscape(id)}, &v, videoRefusal); err != nil {
		return provider.Job{}, err
	}
	switch v.Status {
	case "queued":
		return provider.Job{Status: provider.StatusQueued, Progress: v.Progress}, nil
	case "in_progress":
		return provider.Job{Status: provider.StatusRunning, Progress: min(max(v.Progress, 0), 99)}, nil
	case "completed":
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{
			Source: provider.Source{Open: func(ctx context.Context) (io.ReadCloser, error) { return c.content(ctx, id) }}, ContentType: "video/mp4"}}, nil
	case "failed":
		code := ""
		if v.Error != nil {
			code = v.Error.Code
		}
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: videoMessage(code)}, nil
	}
	return provider.Job{}, fmt.Errorf("openai: unknown video status %q: %w", v.Status, provider.ErrTransient)
}

// content opens a completed video's MP4.
func (c *Client) content(ctx context.Context, id string) (io.ReadCloser, error) {
	res, err := c.api.Do(ctx, rest.Request{Method: http.MethodGet, Path: "/videos/" + url.PathEscape(id) + "/content?variant=video", Accept: "application/binary"})
	if err != nil {
		// The job completed: a refused download is the upstream's trouble, retried.
		return nil, rest.Classify(err, func(se *rest.StatusError) error { return fmt.Errorf("%w: %w", se, provider.ErrTransient) })
	}
	return res.Body, nil
}

// speechRequest is the body of POST /audio/speech.
type speechRequest struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	Instructions   string `json:"instructions,omitempty"`
	ResponseFormat string `json:"response_format"`
}

// Synthesize speaks a text: the contract's input as input and its instructions as
// instructions; when only instructions were sent they hold the full text and are spoken.
func (c *Client) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	body := speechRequest{Model: r.Model, Input: r.Input, Voice: c.voice, Instructions: r.Instructions, ResponseFormat: "mp3"}
	if body.Input == "" {
		body.Input, body.Instructions = r.Text, ""
	}
	b, err := json.Marshal(body)
	if err != nil {
		return provider.Speech{}, fmt.Errorf("openai: %w", err)
	}
	res, err := c.api.Do(ctx, rest.Request{Method: http.MethodPost, Path: "/audio/speech", Body: bytes.NewReader(b),
		ContentType: "application/json", Accept: "audio/mpeg", Header: map[string]string{"Idempotency-Key": r.IdempotencyKey}})
	if err != nil {
		return provider.Speech{}, rest.Classify(err, speechRefusal)
	}
	defer res.Body.Close()
	audio, err := io.ReadAll(provider.Capped(res.Body, maxSpeechBytes))
	if err != nil {
		if errors.Is(err, provider.ErrTooLarge) {
			return provider.Speech{}, &provider.Error{Code: "speech_generation_failed", Message: "The upstream's audio is larger than the service accepts.", Kind: provider.ErrPermanent}
		}
		return provider.Speech{}, fmt.Errorf("openai: reading the audio: %w", provider.ErrTransient)
	}
	if len(audio) == 0 {
		return provider.Speech{}, fmt.Errorf("openai: empty audio: %w", provider.ErrTransient)
	}
	return provider.Speech{ContentType: "audio/mpeg", Source: provider.Source{Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(audio)), nil
	}}}, nil
}

// Check makes one cheap authenticated call: the list of models.
func (c *Client) Check(ctx context.Context) error {
	var out json.RawMessage
	return c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/models"}, &out, videoRefusal)
}

// call makes one JSON call with failures typed for the pipeline.
func (c *Client) call(ctx context.Context, r rest.Request, out any, refused func(*rest.StatusError) error) error {
	return rest.Classify(c.api.JSON(ctx, r, out), refused)
}

// code is the error code of a refusal's body (its code, else its type).
func code(se *rest.StatusError) string {
	var e errorBody
	_ = json.Unmarshal(se.Body, &e)
	if e.Error.Code != "" {
		return e.Error.Code
	}
	return e.Error.Type
}

// videoRefusal is a refused video call: permanent, with the contract's public code.
func videoRefusal(se *rest.StatusError) error {
	return &provider.Error{Code: "video_generation_failed", Message: videoMessage(code(se)), Kind: provider.ErrPermanent}
}

// speechRefusal is a refused speech call: a content refusal, or the text refused as a
// parameter (the speech service answers it as invalid input).
func speechRefusal(se *rest.StatusError) error {
	if c := code(se); contentRefusal(c) {
		return &provider.Error{Code: "speech_generation_failed", Message: "The upstream declined to speak this text.", Kind: provider.ErrPermanent}
	}
	return &provider.Error{Code: "InvalidParameter", Message: "The upstream rejected the request.", Kind: provider.ErrPermanent}
}

func contentRefusal(code string) bool {
	return strings.Contains(code, "moderation") || strings.Contains(code, "content_policy") || strings.Contains(code, "safety")
}

// videoMessage is a sanitized sentence for a failed or refused video: never the upstream's
// own text.
func videoMessage(code string) string {
	if contentRefusal(code) {
		return "The upstream declined to generate this content."
	}
	if code == "invalid_request_error" || strings.HasPrefix(code, "invalid") {
		return "The upstream rejected the request's parameters."
	}
	return "The video could not be generated."
}
