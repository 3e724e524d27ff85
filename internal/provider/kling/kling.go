// Package kling is the upstream adapter of Kling (Kuaishou) video generation: typed REST calls
// of its published API (POST {base}/v1/videos/text2video and /image2video, GET of a task by
// its task_id or its external_task_id), authenticated by a short-lived JWT the account signs
// with its secret key (auth.go). It never retries a create by itself: a retried create starts
// a second paid job, so retries are the job engine's, after it recorded the attempt; a create
// whose answer was lost is found again by its external_task_id (FindGeneration).
// docs/upstreams.md#kling describes the mapping and cites the reference page of every field.
package kling

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
	"regexp"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Config configures a Client.
type Config struct {
	BaseURL   string // the API root, e.g. https://api-singapore.klingai.com (no /v1)
	AccessKey string // the token's iss
	SecretKey string // signs the token; never sent
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
	// Now is the clock tokens are dated by (default time.Now).
	Now func() time.Time
}

// Client calls one Kling account.
type Client struct {
	api  *rest.Client
	auth *signer
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("kling: an account needs both its access key and its secret key")
	}
	// rest's own Bearer header carries the access key only as a placeholder: every call
	// replaces it with a signed token (call), and rest scrubs the access key from errors.
	api, err := rest.New(rest.Config{Name: "kling", BaseURL: cfg.BaseURL, APIKey: cfg.AccessKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Client{api: api, auth: &signer{access: cfg.AccessKey, secret: []byte(cfg.SecretKey), now: now}}, nil
}

// Endpoints: a request with a frame image is image2video, any other text2video.
const (
	text2video  = "text2video"
	image2video = "image2video"
)

// createRequest is the body of both creates (image2video adds image and image_tail and has
// no aspect_ratio: the image's shape decides).
type createRequest struct {
	ModelName      string `json:"model_name"`
	Prompt         string `json:"prompt,omitempty"`
	Image          string `json:"image,omitempty"`
	ImageTail      string `json:"image_tail,omitempty"`
	Mode           string `json:"mode,omitempty"`         // std (720p), pro (1080p)
	AspectRatio    string `json:"aspect_ratio,omitempty"` // 16:9, 9:16, 1:1
	Duration       string `json:"duration,omitempty"`     // "5", "10"
	ExternalTaskID string `json:"external_task_id,omitempty"`
}

// envelope is every answer's: code 0 and data, or a non-zero code and a message.
type envelope struct {
	Code      int             `json:"code"`
	Message   string          `json:"message"`
	RequestID string          `json:"request_id"`
	Data      json.RawMessage `json:"data"`
}

// task is the data of a create answer and of a task read.
type task struct {
	TaskID        string `json:"task_id"`
	TaskStatus    string `json:"task_status"` // submitted, processing, succeed, failed
	TaskStatusMsg string `json:"task_status_msg"`
	TaskInfo      struct {
		ExternalTaskID string `json:"external_task_id"`
	} `json:"task_info"`
	TaskResult struct {
		Videos []struct {
			ID       string `json:"id"`
			URL      string `json:"url"`
			Duration string `json:"duration"` // seconds, as a string: "5.1"
		} `json:"videos"`
	} `json:"task_result"`
	CreatedAt int64 `json:"created_at"` // ms
}

// modes maps the contract's resolution to Kling's mode: std makes 720p, pro 1080p.
var modes = map[string]string{"720p": "std", "1080p": "pro"}

// Mode is the mode a resolution is generated in ("" for one Kling does not make).
func Mode(resolution string) string { return modes[resolution] }

// reExternal is what of an idempotency key goes to Kling as it is: short, plain characters.
var reExternal = regexp.MustCompile(`^[A-Za-z0-9_:.-]{1,64}$`)

// ExternalID is the external_task_id of the creates of one idempotency key (a task's half):
// the key itself, which names our task in Kling's console and in its answers, or a hash of it
// when it is too long or holds characters an id should not.
func ExternalID(idempotencyKey string) string {
	if reExternal.MatchString(idempotencyKey) {
		return idempotencyKey
	}
	sum := sha256.Sum256([]byte("mediagen-kling:" + idempotencyKey))
	return "mg-" + hex.EncodeToString(sum[:16])
}

// endpoint is the create of a request.
func endpoint(r provider.GenerateRequest) string {
	for _, in := range r.Inputs {
		if in.Role == "first_frame" || in.Role == "last_frame" {
			return image2video
		}
	}
	return text2video
}

// request builds the create body; -1 (the model's default duration) is left out, and an
// adaptive ratio of a text request is Kling's default, 16:9.
func request(r provider.GenerateRequest) createRequest {
	body := createRequest{ModelName: r.Model, Prompt: r.Prompt, Mode: modes[r.Resolution]}
	if r.IdempotencyKey != "" {
		body.ExternalTaskID = ExternalID(r.IdempotencyKey)
	}
	if r.Duration > 0 {
		body.Duration = fmt.Sprint(r.Duration)
	}
	for _, in := range r.Inputs {
		switch in.Role {
		case "first_frame":
			body.Image = in.Source.URL
		case "last_frame":
			body.ImageTail = in.Source.URL
		}
	}
	if endpoint(r) == text2video {
		body.AspectRatio = r.Ratio
		if r.Ratio == "" || r.Ratio == "adaptive" {
			body.AspectRatio = "16:9"
		}
	}
	return body
}

// jobID names a task with its endpoint, which its read needs: "text2video/8319…".
func jobID(ep, taskID string) string { return ep + "/" + taskID }

// SubmitGeneration creates a generation task, once: any failure is returned to the job
// engine, which decides about another attempt (after FindGeneration).
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	b, err := json.Marshal(request(r))
	if err != nil {
		return "", fmt.Errorf("kling: %w", err)
	}
	ep := endpoint(r)
	var t task
	if err := c.call(ctx, http.MethodPost, "/v1/videos/"+ep, b, &t); err != nil {
		return "", err
	}
	if t.TaskID == "" {
		return "", fmt.Errorf("kling: create answered without a task id: %w", provider.ErrTransient)
	}
	return jobID(ep, t.TaskID), nil
}

// PollGeneration reads a task and maps its state.
func (c *Client) PollGeneration(ctx context.Context, id string) (provider.Job, error) {
	ep, taskID, ok := strings.Cut(id, "/")
	if !ok || (ep != text2video && ep != image2video) || taskID == "" {
		return provider.Job{}, fmt.Errorf("kling: job id %q: %w", id, provider.ErrUnknownJob)
	}
	t, err := c.read(ctx, ep, taskID)
	if err != nil {
		return provider.Job{}, err
	}
	switch t.TaskStatus {
	case "submitted":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "processing":
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	case "succeed":
		if len(t.TaskResult.Videos) == 0 || t.TaskResult.Videos[0].URL == "" {
			return provider.Job{}, fmt.Errorf("kling: task succeeded without a video URL: %w", provider.ErrTransient)
		}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{
			Source: provider.Source{URL: t.TaskResult.Videos[0].URL}, ContentType: "video/mp4"}}, nil
	case "failed":
		// task_status_msg is Kling's own text: it is read for its kind, never passed on.
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed",
			ErrorMessage: failedMessage(t.TaskStatusMsg)}, nil
	}
	return provider.Job{}, fmt.Errorf("kling: unknown task status %q: %w", t.TaskStatus, provider.ErrTransient)
}

// read is GET /v1/videos/{endpoint}/{id}; id is a task_id or an external_task_id.
func (c *Client) read(ctx context.Context, ep, id string) (task, error) {
	var t task
	err := c.call(ctx, http.MethodGet, "/v1/videos/"+ep+"/"+url.PathEscape(id), nil, &t)
	return t, err
}

// FindGeneration implements provider.GenerationFinder: Kling reads a task by the
// external_task_id its create carried, so a create whose answer was lost (a crash, a
// timeout, a 5xx after the task was made) is found by reading it back, never made twice.
// A read Kling answers "no such task" means no earlier create made one.
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, _ time.Time) (string, bool, error) {
	if r.IdempotencyKey == "" {
		return "", false, nil
	}
	ep := endpoint(r)
	t, err := c.read(ctx, ep, ExternalID(r.IdempotencyKey))
	var pe *provider.Error
	switch {
	case errors.Is(err, errNoSuchTask):
		return "", false, nil
	case errors.As(err, &pe):
		// A refused read is not a refused task: try again later.
		return "", false, fmt.Errorf("kling: reading by external_task_id: %s: %w", pe.Code, provider.ErrTransient)
	case err != nil:
		return "", false, err
	case t.TaskID == "":
		return "", false, fmt.Errorf("kling: read by external_task_id answered without a task id: %w", provider.ErrTransient)
	}
	return jobID(ep, t.TaskID), true, nil
}

// Check makes one cheap authenticated call that starts nothing: the read of a task id no
// create makes. Kling answers it "not found" (or refuses the id) once the token passed, and
// 401 for a refused token; only the token and the connection are checked.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.read(ctx, text2video, "mediagen-upstream-check")
	if errors.Is(err, errNoSuchTask) || errors.Is(err, provider.ErrPermanent) {
		return nil
	}
	return err
}

// call makes one call with a fresh token and decodes the data of its answer into out, with
// failures typed for the pipeline (classify).
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	token, err := c.auth.bearer()
	if err != nil {
		return err
	}
	r := rest.Request{Method: method, Path: path, Header: map[string]string{"Authorization": "Bearer " + token}}
	if body != nil {
		r.Body, r.ContentType = bytes.NewReader(body), "application/json"
	}
	var env envelope
	if err := classify(c.api.JSON(ctx, r, &env)); err != nil {
		return err
	}
	if env.Code != 0 {
		return byCode(env.Code, 0, fmt.Errorf("kling %s %s: code %d", method, path, env.Code))
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("kling %s %s: malformed data: %w", method, path, provider.ErrTransient)
	}
	return nil
}
