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
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/internal/provider"
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
}

// Client calls one Ark account.
type Client struct {
	base string
	key  string
	http *http.Client

	gap  time.Duration // between two calls; 0: none
	mu   sync.Mutex
	next time.Time // when the next call may start
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, errors.New("ark: base URL must be an absolute URL")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("ark: no API key")
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	c := &Client{base: strings.TrimRight(cfg.BaseURL, "/"), key: cfg.APIKey, http: hc}
	if cfg.RequestsPerSecond > 0 {
		c.gap = time.Duration(float64(time.Second) / cfg.RequestsPerSecond)
	}
	return c, nil
}

// pace waits for this call's turn under the request rate. A caller whose context ends first
// gets a transient error: the job engine tries again later.
func (c *Client) pace(ctx context.Context) error {
	if c.gap == 0 {
		return nil
	}
	c.mu.Lock()
	now := time.Now()
	at := c.next
	if at.Before(now) {
		at = now
	}
	c.next = at.Add(c.gap)
	c.mu.Unlock()
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("ark: waiting for the account's request rate: %w", provider.ErrTransient)
		case <-t.C:
		}
	}
	return nil
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
// inputs in request order with their roles; -1 (the model's default duration) is left out.
func request(r provider.GenerateRequest) createRequest {
	body := createRequest{Model: r.Model, Ratio: r.Ratio, Resolution: r.Resolution, Seed: r.Seed,
		Watermark: r.Watermark, GenerateAudio: r.GenerateAudio}
	if r.IdempotencyKey != "" {
		body.SafetyIdentifier = Tag(r.IdempotencyKey)
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
	b, err := json.Marshal(request(r))
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

// call makes one HTTP call and decodes a 2xx JSON answer into out. Failures are typed for
// the pipeline: a refused request is permanent (with a public code), everything that may
// pass is transient. The upstream's raw message never leaves this package except in logs of
// the error chain, and the key never leaves it at all.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	if err := c.pace(ctx); err != nil {
		return err
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("ark: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("ark %s %s: %s: %w", method, path, scrub(err.Error(), c.key), provider.ErrTransient)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("ark %s %s: reading the answer: %w", method, path, provider.ErrTransient)
	}
	if res.StatusCode/100 != 2 {
		var e apiError
		_ = json.Unmarshal(data, &e)
		err := statusError(method, path, res.StatusCode, e.Error.Code)
		if after := retryAfter(res.Header.Get("Retry-After")); after > 0 && errors.Is(err, provider.ErrTransient) {
			return &provider.RetryAfter{After: after, Err: err}
		}
		return err
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("ark %s %s: malformed answer: %w", method, path, provider.ErrTransient)
	}
	return nil
}

// statusError maps an HTTP failure: 400 and 404 are refusals of this request (permanent,
// with a public code), 401 and 403 a broken account (the task waits while the operator fixes
// the key), 408, 429 and 5xx pass.
func statusError(method, path string, status int, code string) error {
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return fmt.Errorf("ark %s %s: HTTP %d %s: %w", method, path, status, code, provider.ErrAccount)
	}
	kind := provider.ErrTransient
	if status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusUnprocessableEntity {
		kind = provider.ErrPermanent
	}
	if kind == provider.ErrPermanent {
		return &provider.Error{Code: publicCode(code), Message: publicMessage(code), Kind: provider.ErrPermanent}
	}
	return fmt.Errorf("ark %s %s: HTTP %d %s: %w", method, path, status, code, kind)
}

// retryAfter reads a Retry-After header in seconds, bounded to 10 minutes (0: none).
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, 600)) * time.Second
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

// scrub removes the key from an error text (a transport error can quote a request).
func scrub(s, key string) string { return strings.ReplaceAll(s, key, "[key]") }
