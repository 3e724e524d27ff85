// Package minimax is the upstream adapter of MiniMax's Hailuo video generation API, typed REST
// of its published reference (platform.minimax.io, docs/upstreams.md#minimax): a create
// (POST {base}/v1/video_generation → task_id), a task query (GET
// {base}/v1/query/video_generation?task_id=… → status and, on success, file_id) and a file
// retrieval (GET {base}/v1/files/retrieve?file_id=… → file.download_url). Every answer carries
// base_resp {status_code, status_msg}; a non-zero code is an error even on HTTP 200, mapped here
// to the pipeline's error kinds. It never retries a create by itself: MiniMax has no
// idempotency key, so a retried create is a second paid job.
package minimax

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Config configures a Client.
type Config struct {
	BaseURL string // the API root: https://api.minimax.io (international) or https://api.minimaxi.com
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
}

// Client calls one MiniMax account.
type Client struct{ api *rest.Client }

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "minimax", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	return &Client{api: api}, nil
}

// Resolutions of the API's resolution field, by the contract's resolution: MiniMax's 768P
// (1366x768 at 16:9) is its 720p-class tier, so a 720p request gets a slightly larger frame
// (billed at 720p; the rest is the operator's excess, docs/upstreams.md#minimax).
var Resolutions = map[string]string{"720p": "768P", "1080p": "1080P"}

// Durations the API makes (seconds); 10 only at 768P.
var Durations = []int{6, 10}

// MaxSecondsAt1080P is the longest video the API makes at 1080P.
const MaxSecondsAt1080P = 6

// createRequest is the body of POST /v1/video_generation.
type createRequest struct {
	Model           string `json:"model"`
	Prompt          string `json:"prompt,omitempty"`
	FirstFrameImage string `json:"first_frame_image,omitempty"`
	Duration        int    `json:"duration,omitempty"`
	Resolution      string `json:"resolution,omitempty"`
}

// baseResp is the status every answer carries.
type baseResp struct {
	StatusCode int    `json:"status_code"`
	StatusMsg  string `json:"status_msg"`
}

// queryAnswer is the body of GET /v1/query/video_generation.
type queryAnswer struct {
	TaskID      string   `json:"task_id"`
	Status      string   `json:"status"` // Preparing, Queueing, Processing, Success, Fail
	FileID      string   `json:"file_id"`
	VideoWidth  int      `json:"video_width"`
	VideoHeight int      `json:"video_height"`
	BaseResp    baseResp `json:"base_resp"`
}

// fileAnswer is the body of GET /v1/files/retrieve.
type fileAnswer struct {
	File struct {
		FileID      int64  `json:"file_id"`
		Bytes       int64  `json:"bytes"`
		Filename    string `json:"filename"`
		DownloadURL string `json:"download_url"`
	} `json:"file"`
	BaseResp baseResp `json:"base_resp"`
}

// Status codes of base_resp (platform.minimax.io/docs/api-reference/errorcode).
const (
	codeOK                = 0
	codeUnknown           = 1000
	codeTimeout           = 1001
	codeRateLimit         = 1002
	codeAuth              = 1004
	codeBalance           = 1008
	codeInternal          = 1024
	codeInputSensitive    = 1026
	codeOutputSensitive   = 1027
	codeTokenRateLimit    = 1039
	codeInvalidParams     = 2013
	codeInvalidAPIKey     = 2049
	codeServiceOverloaded = 1033
)

// request builds the create body: the prompt, the first frame's URL, the duration (-1, the
// model's default, is left out) and the resolution.
func request(r provider.GenerateRequest) createRequest {
	body := createRequest{Model: r.Model, Prompt: r.Prompt, Resolution: Resolutions[r.Resolution]}
	if r.Duration > 0 {
		body.Duration = r.Duration
	}
	for _, in := range r.Inputs {
		if in.Type == "image_url" && in.Role == "first_frame" {
			body.FirstFrameImage = in.Source.URL
		}
	}
	return body
}

// SubmitGeneration creates a video task, once: any failure goes back to the job engine.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	b, err := json.Marshal(request(r))
	if err != nil {
		return "", fmt.Errorf("minimax: %w", err)
	}
	var out struct {
		TaskID   string   `json:"task_id"`
		BaseResp baseResp `json:"base_resp"`
	}
	if err := c.call(ctx, "POST /v1/video_generation", rest.Request{Method: http.MethodPost, Path: "/v1/video_generation",
		Body: bytes.NewReader(b), ContentType: "application/json"}, &out, &out.BaseResp); err != nil {
		return "", err
	}
	if out.TaskID == "" {
		return "", fmt.Errorf("minimax: create answered without a task id: %w", provider.ErrTransient)
	}
	return out.TaskID, nil
}

// PollGeneration queries a task and maps its state; a succeeded task's file is retrieved
// for a fresh download link on every poll, so an expired link is replaced by the next poll.
func (c *Client) PollGeneration(ctx context.Context, id string) (provider.Job, error) {
	var q queryAnswer
	path := "/v1/query/video_generation?task_id=" + url.QueryEscape(id)
	if err := c.call(ctx, "GET /v1/query/video_generation", rest.Request{Method: http.MethodGet, Path: path}, &q, &q.BaseResp); err != nil {
		var fail *failed
		if errors.As(err, &fail) {
			return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: publicMessage(fail.code)}, nil
		}
		return provider.Job{}, err
	}
	switch q.Status {
	case "Preparing", "Queueing":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "Processing":
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	case "Success":
		if q.FileID == "" {
			return provider.Job{}, fmt.Errorf("minimax: task succeeded without a file id: %w", provider.ErrTransient)
		}
		link, err := c.downloadURL(ctx, q.FileID)
		if err != nil {
			return provider.Job{}, err
		}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{
			Source: provider.Source{URL: link}, ContentType: "video/mp4"}}, nil
	case "Fail":
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: publicMessage(q.BaseResp.StatusCode)}, nil
	}
	return provider.Job{}, fmt.Errorf("minimax: unknown task status %q: %w", q.Status, provider.ErrTransient)
}

// downloadURL retrieves a file's temporary download link.
func (c *Client) downloadURL(ctx context.Context, fileID string) (string, error) {
	var f fileAnswer
	err := c.call(ctx, "GET /v1/files/retrieve", rest.Request{Method: http.MethodGet, Path: "/v1/files/retrieve?file_id=" + url.QueryEscape(fileID)}, &f, &f.BaseResp)
	var fail *failed
	if errors.As(err, &fail) {
		// The task succeeded; its file cannot be read yet: try again on the next poll.
		return "", fmt.Errorf("minimax: retrieving file: code %d: %w", fail.code, provider.ErrTransient)
	}
	if err != nil {
		return "", err
	}
	if f.File.DownloadURL == "" {
		return "", fmt.Errorf("minimax: file answered without a download URL: %w", provider.ErrTransient)
	}
	return f.File.DownloadURL, nil
}

// FindGeneration implements provider.GenerationFinder for an API that has no way to find a
// lost create: no idempotency key, and no list of tasks to search by a tag of ours. A create
// whose answer was lost may have made a paid job; creating again may make a second. So the
// answer is ErrOutcomeUnknown: the task ends (refunded) and the possible job is recorded as
// the operator's upstream excess, never submitted twice (docs/upstreams.md, "never a second
// paid job").
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	return "", false, &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.", Kind: provider.ErrOutcomeUnknown}
}

// BlindCreates implements provider.BlindCreator: a create refused outright (1002, 1004,
// 1008) made no job, and a lost one cannot be found.
func (c *Client) BlindCreates() {}

// checkTaskID is the task id of upstream check's query: no task has it, so the call costs
// nothing and proves the key and the base URL (a refused key answers 1004).
const checkTaskID = "0"

// Check makes one cheap authenticated call: a query of a task that does not exist. A refused
// key, a rate limit or a server error fail it; the API's "no such task" answer passes.
func (c *Client) Check(ctx context.Context) error {
	var q queryAnswer
	err := c.call(ctx, "GET /v1/query/video_generation", rest.Request{Method: http.MethodGet, Path: "/v1/query/video_generation?task_id=" + checkTaskID}, &q, &q.BaseResp)
	var fail *failed
	if errors.As(err, &fail) {
		return nil
	}
	return err
}

// failed is a permanent base_resp code of a query: the task, not the call, failed.
type failed struct{ code int }

func (f *failed) Error() string { return "minimax: code " + strconv.Itoa(f.code) }

// call makes one call and decodes its 2xx JSON answer into out, then reads its base_resp
// (br, a field of out): a non-zero code is an error whatever the HTTP status. HTTP failures
// are typed by rest.Classify, their body's base_resp read the same way.
func (c *Client) call(ctx context.Context, name string, r rest.Request, out any, br *baseResp) error {
	err := c.api.JSON(ctx, r, out)
	if err != nil {
		return rest.Classify(err, func(se *rest.StatusError) error {
			var e struct {
				BaseResp baseResp `json:"base_resp"`
			}
			_ = json.Unmarshal(se.Body, &e)
			if mapped := c.codeError(name, e.BaseResp.StatusCode, r.Method == http.MethodGet); mapped != nil {
				return mapped
			}
			return &provider.Error{Code: "video_generation_failed", Message: publicMessage(e.BaseResp.StatusCode), Kind: provider.ErrPermanent}
		})
	}
	return c.codeError(name, br.StatusCode, r.Method == http.MethodGet)
}

// codeError maps a base_resp status code. Rate limits become a 429 and a refused key a 401, as
// the HTTP statuses they stand for, so routing and the breaker treat them alike across kinds;
// an exhausted balance is the account's, not the task's (tasks wait for the operator); an
// input refusal is the request's (failed, refunded); server-side codes are transient. On a
// query (get), a permanent code means the task failed (*failed).
func (c *Client) codeError(name string, code int, get bool) error {
	switch code {
	case codeOK:
		return nil
	case codeRateLimit, codeTokenRateLimit:
		return rest.Classify(&rest.StatusError{Call: "minimax " + name, Status: http.StatusTooManyRequests}, nil)
	case codeAuth, codeInvalidAPIKey:
		return rest.Classify(&rest.StatusError{Call: "minimax " + name, Status: http.StatusUnauthorized}, nil)
	case codeBalance:
		return fmt.Errorf("minimax %s: insufficient balance (1008): %w", name, provider.ErrAccount)
	case codeUnknown, codeTimeout, codeInternal, codeServiceOverloaded:
		return fmt.Errorf("minimax %s: code %d: %w", name, code, provider.ErrTransient)
	}
	if get {
		return &failed{code: code}
	}
	return &provider.Error{Code: "video_generation_failed", Message: publicMessage(code), Kind: provider.ErrPermanent}
}

// publicMessage is a sanitized sentence for a refusal: never the upstream's own text.
func publicMessage(code int) string {
	switch code {
	case codeInputSensitive, codeOutputSensitive:
		return "The upstream declined to generate this content."
	case codeInvalidParams:
		return "The upstream rejected the request's parameters."
	}
	return "The video could not be generated."
}
