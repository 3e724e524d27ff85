// Package ark is the upstream adapter of Volcengine/BytePlus ModelArk content generation (the
// Seedance video models): typed REST calls of its documented wire format
// (POST/GET {base}/contents/generations/tasks), the same fields as the official SDK's
// model.CreateContentGenerationTaskRequest and GetContentGenerationTaskResponse. It never
// retries a create call by itself: a retried create starts a second paid job, so retries are
// the job engine's, after it recorded the attempt. docs/upstreams.md#ark describes the mapping.
package ark

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Config configures a Client.
type Config struct {
	BaseURL string // e.g. https://ark.cn-beijing.volces.com/api/v3 (or the BytePlus region's)
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing). It is the account's
	// request rate in one process.
	RequestsPerSecond float64
	// AssetLibrary is the ark_assets account of the same ModelArk account (catalog
	// asset_library): its assets are sent as asset://<vendor id>, which Seedance 2.0 takes
	// where it refuses a real face by URL. "": every input is sent by its link.
	AssetLibrary string
}

// Client calls one Ark account.
type Client struct {
	api     *rest.Client
	library string
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "ark", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	return &Client{api: api, library: cfg.AssetLibrary}, nil
}

// contentItem is one item of the request's content array.
type contentItem struct {
	Type     string  `json:"type"` // text, image_url, video_url, audio_url
	Text     string  `json:"text,omitempty"`
	ImageURL *urlRef `json:"image_url,omitempty"`
	VideoURL *urlRef `json:"video_url,omitempty"`
	AudioURL *urlRef `json:"audio_url,omitempty"`
	Role     string  `json:"role,omitempty"` // first_frame, last_frame, reference_image, reference_video, reference_audio
}

type urlRef struct {
	URL string `json:"url"`
}

// createRequest is the body of POST /contents/generations/tasks.
type createRequest struct {
	Model         string        `json:"model"`
	Content       []contentItem `json:"content"`
	Ratio         string        `json:"ratio,omitempty"`
	Resolution    string        `json:"resolution,omitempty"`
	Duration      *int64        `json:"duration,omitempty"`
	Seed          *int64        `json:"seed,omitempty"`
	Watermark     *bool         `json:"watermark,omitempty"`
	GenerateAudio *bool         `json:"generate_audio,omitempty"`
	// OmniReferenceTaskType is the contract's omni_reference_task_type (left out for auto).
	OmniReferenceTaskType string `json:"omni_reference_task_type,omitempty"`
	// SafetyIdentifier carries Tag(idempotency key): Ark returns it in its task list, which is
	// how FindGeneration recognises a job an unrecorded create started.
	SafetyIdentifier string `json:"safety_identifier,omitempty"`
}

// Tag is the safety_identifier of the create calls of one idempotency key (a task's half):
// an opaque hash, so Ark sees no task id, of a length Ark accepts.
func Tag(idempotencyKey string) string {
	sum := sha256.Sum256([]byte("mediagen-ark-tag:" + idempotencyKey))
	return "mg-" + hex.EncodeToString(sum[:16])
}

// task is the body of GET /contents/generations/tasks/{id}.
type task struct {
	ID     string `json:"id"`
	Status string `json:"status"` // queued, running, succeeded, failed, cancelled, expired
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Content struct {
		VideoURL string `json:"video_url"`
	} `json:"content"`
	Usage struct {
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// apiError is Ark's error envelope.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// request builds the create body of a generation request: the prompt as a text item, then the
// inputs in request order with their roles; -1 (the model's default duration) is left out. An
// input registered in the account's asset library (library) goes as asset://<its vendor id>.
func request(r provider.GenerateRequest, library string) createRequest {
	body := createRequest{Model: r.Model, Ratio: r.Ratio, Resolution: r.Resolution, Seed: r.Seed,
		Watermark: r.Watermark, GenerateAudio: r.GenerateAudio}
	if r.IdempotencyKey != "" {
		body.SafetyIdentifier = Tag(r.IdempotencyKey)
	}
	if r.TaskType != "" && r.TaskType != "auto" {
		body.OmniReferenceTaskType = r.TaskType
	}
	if r.Duration > 0 {
		d := int64(r.Duration)
		body.Duration = &d
	}
	if r.Prompt != "" {
		body.Content = append(body.Content, contentItem{Type: "text", Text: r.Prompt})
	}
	for _, in := range r.Inputs {
		ref := &urlRef{URL: in.Source.URL}
		if library != "" && in.Source.Library == library && in.Source.LibraryID != "" {
			ref.URL = "asset://" + in.Source.LibraryID
		}
		it := contentItem{Type: in.Type, Role: in.Role}
		switch in.Type {
		case "image_url":
			it.ImageURL = ref
		case "video_url":
			it.VideoURL = ref
		case "audio_url":
			it.AudioURL = ref
		}
		body.Content = append(body.Content, it)
	}
	return body
}

// SubmitGeneration creates a generation task, once: any failure is returned to the job
// engine, which decides about another attempt.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	b, err := json.Marshal(request(r, c.library))
	if err != nil {
		return "", fmt.Errorf("ark: %w", err)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, http.MethodPost, "/contents/generations/tasks", b, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("ark: create answered without a task id: %w", provider.ErrTransient)
	}
	return out.ID, nil
}

// PollGeneration reads a task and maps its state.
func (c *Client) PollGeneration(ctx context.Context, id string) (provider.Job, error) {
	var t task
	if err := c.call(ctx, http.MethodGet, "/contents/generations/tasks/"+url.PathEscape(id), nil, &t); err != nil {
		return provider.Job{}, err
	}
	switch t.Status {
	case "queued":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "running":
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	case "succeeded":
		if t.Content.VideoURL == "" {
			return provider.Job{}, fmt.Errorf("ark: task succeeded without a video URL: %w", provider.ErrTransient)
		}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{
			Source: provider.Source{URL: t.Content.VideoURL}, ContentType: "video/mp4", CompletionTokens: t.Usage.CompletionTokens}}, nil
	case "failed", "cancelled":
		code := ""
		if t.Error != nil {
			code = t.Error.Code
		}
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: publicCode(code), ErrorMessage: publicMessage(code)}, nil
	case "expired":
		return provider.Job{Status: provider.StatusExpired, Progress: 100, ErrorCode: "video_generation_failed",
			ErrorMessage: "The upstream did not finish the video in time."}, nil
	}
	return provider.Job{}, fmt.Errorf("ark: unknown task status %q: %w", t.Status, provider.ErrTransient)
}

// listItem is one task of GET /contents/generations/tasks (ListContentGenerationTaskItem).
type listItem struct {
	ID               string `json:"id"`
	SafetyIdentifier string `json:"safety_identifier"`
	CreatedAt        int64  `json:"created_at"`
}

// Bounds of FindGeneration's search: pages of the list, and how far before the recorded
// "about to submit" time a task's created_at may be (clocks of two machines differ).
const (
	findPageSize = 100
	findMaxPages = 10
	findSkew     = 5 * time.Minute
)

// FindGeneration implements provider.GenerationFinder: it looks through the account's tasks
// of the request's model, newest first, for one whose safety_identifier is the request's tag,
// back to since (less findSkew) and at most findMaxPages pages. A create whose answer was
// lost (a crash, a timeout, a 5xx after the job was made) is found here instead of being
// started a second time. docs/upstreams.md says what this cannot see.
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	if r.IdempotencyKey == "" {
		return "", false, nil
	}
	want := Tag(r.IdempotencyKey)
	oldest := since.Add(-findSkew).Unix()
	for page := 1; page <= findMaxPages; page++ {
		q := url.Values{}
		q.Set("page_num", strconv.Itoa(page))
		q.Set("page_size", strconv.Itoa(findPageSize))
		q.Set("filter.model", r.Model)
		var out struct {
			Items []listItem `json:"items"`
		}
		if err := c.call(ctx, http.MethodGet, "/contents/generations/tasks?"+q.Encode(), nil, &out); err != nil {
			var pe *provider.Error
			if errors.As(err, &pe) {
				// A refused list is not a refused task: try again later.
				return "", false, fmt.Errorf("ark: listing tasks: %s: %w", pe.Code, provider.ErrTransient)
			}
			return "", false, err
		}
		done := len(out.Items) < findPageSize
		for _, it := range out.Items {
			if it.SafetyIdentifier == want {
				return it.ID, true, nil
			}
			if !since.IsZero() && it.CreatedAt > 0 && it.CreatedAt < oldest {
				done = true
			}
		}
		if done {
			return "", false, nil
		}
	}
	return "", false, nil
}

// Check makes one cheap authenticated call: a list of at most one task.
func (c *Client) Check(ctx context.Context) error {
	var out json.RawMessage
	return c.call(ctx, http.MethodGet, "/contents/generations/tasks?page_num=1&page_size=1", nil, &out)
}

// call makes one call and decodes its 2xx JSON answer into out, with failures typed for the
// pipeline (rest.Classify): a refused request is permanent with a public code from Ark's
// error code; the upstream's raw message never leaves this package.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	r := rest.Request{Method: method, Path: path}
	if body != nil {
		r.Body, r.ContentType = bytes.NewReader(body), "application/json"
	}
	return rest.Classify(c.api.JSON(ctx, r, out), func(se *rest.StatusError) error {
		var e apiError
		_ = json.Unmarshal(se.Body, &e)
		return &provider.Error{Code: publicCode(e.Error.Code), Message: publicMessage(e.Error.Code), Kind: provider.ErrPermanent}
	})
}

// publicCode keeps the contract's vocabulary: the one upstream code the contract names, and
// video_generation_failed for everything else.
func publicCode(code string) string {
	if code == "InvalidParameter.TaskTypeMismatch" {
		return code
	}
	return "video_generation_failed"
}

// publicMessage is a sanitized sentence for a refusal: never the upstream's own text.
func publicMessage(code string) string {
	switch {
	case strings.Contains(code, "Sensitive"):
		return "The upstream declined to generate this content."
	case code == "InvalidParameter.TaskTypeMismatch":
		return "The prompt and inputs do not match the specified task type."
	case strings.HasPrefix(code, "InvalidParameter"):
		return "The upstream rejected the request's parameters."
	}
	return "The video could not be generated."
}
