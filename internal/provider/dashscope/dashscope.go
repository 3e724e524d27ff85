// Package dashscope is the upstream adapter of Alibaba Cloud Model Studio (DashScope) video
// synthesis, the Wan models: typed REST calls of its published wire format. A task is created
// with POST {base}/api/v1/services/aigc/video-generation/video-synthesis under the header
// X-DashScope-Async: enable, and read with GET {base}/api/v1/tasks/{task_id}; the China
// (https://dashscope.aliyuncs.com) and international (https://dashscope-intl.aliyuncs.com)
// services differ only in base URL. It never retries a create by itself: DashScope has no
// idempotency key, so a retried create is a second paid job. docs/upstreams.md#dashscope
// cites the reference page of every field used here.
package dashscope

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
	BaseURL string // https://dashscope.aliyuncs.com or https://dashscope-intl.aliyuncs.com
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
}

// Client calls one DashScope account.
type Client struct {
	api  *rest.Client
	seen answered // the creates answered to this client, by idempotency key (answered.go)
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "dashscope", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	return &Client{api: api}, nil
}

// Paths of the API (docs/upstreams.md#dashscope).
const (
	createPath = "/api/v1/services/aigc/video-generation/video-synthesis"
	tasksPath  = "/api/v1/tasks"
)

// createRequest is the body of a video-synthesis create.
type createRequest struct {
	Model      string     `json:"model"`
	Input      input      `json:"input"`
	Parameters parameters `json:"parameters"`
}

type input struct {
	Prompt string `json:"prompt,omitempty"`
	// ImgURL is the first frame of image-to-video (the i2v models).
	ImgURL string `json:"img_url,omitempty"`
}

type parameters struct {
	// Size is text-to-video's "width*height"; Resolution is image-to-video's "480P", "720P"
	// or "1080P" (the frame's shape follows the image).
	Size       string `json:"size,omitempty"`
	Resolution string `json:"resolution,omitempty"`
	Duration   *int64 `json:"duration,omitempty"`
	// PromptExtend is sent false: DashScope's default rewrites the prompt with a language
	// model, and the tenant asked for its own prompt.
	PromptExtend *bool  `json:"prompt_extend,omitempty"`
	Seed         *int64 `json:"seed,omitempty"`
	Watermark    *bool  `json:"watermark,omitempty"`
}

// Sizes are text-to-video's width*height by resolution and ratio: the sizes the Wan
// text-to-video reference lists. "adaptive" in text mode is 16:9, the API's default shape.
var Sizes = map[string]map[string]string{
	"480p":  {"16:9": "832*480", "9:16": "480*832", "1:1": "624*624"},
	"720p":  {"16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088"},
	"1080p": {"16:9": "1920*1080", "9:16": "1080*1920", "1:1": "1440*1440", "4:3": "1632*1248", "3:4": "1248*1632"},
}

// DefaultResolution is the contract's resolution when a request names none.
const DefaultResolution = "720p"

// task is the body of GET /api/v1/tasks/{task_id} (and of the create's answer).
type task struct {
	RequestID string `json:"request_id"`
	Output    struct {
		TaskID     string `json:"task_id"`
		TaskStatus string `json:"task_status"` // PENDING, RUNNING, SUCCEEDED, FAILED, CANCELED, UNKNOWN
		VideoURL   string `json:"video_url"`
		Code       string `json:"code"`
		Message    string `json:"message"`
	} `json:"output"`
	Usage struct {
		VideoDuration float64 `json:"video_duration"`
		VideoCount    int     `json:"video_count"`
	} `json:"usage"`
}

// apiError is DashScope's error body: {code, message, request_id}.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// request builds the create body: a first frame makes it image-to-video (img_url and
// resolution), otherwise text-to-video (size).
func request(r provider.GenerateRequest) createRequest {
	off := false
	body := createRequest{Model: r.Model, Input: input{Prompt: r.Prompt},
		Parameters: parameters{PromptExtend: &off, Seed: r.Seed, Watermark: r.Watermark}}
	if r.Duration > 0 {
		d := int64(r.Duration)
		body.Parameters.Duration = &d
	}
	res := r.Resolution
	if res == "" {
		res = DefaultResolution
	}
	for _, in := range r.Inputs {
		if in.Type == "image_url" && in.Role == "first_frame" {
			body.Input.ImgURL = in.Source.URL
		}
	}
	if body.Input.ImgURL != "" {
		body.Parameters.Resolution = map[string]string{"480p": "480P", "720p": "720P", "1080p": "1080P"}[res]
		return body
	}
	ratio := r.Ratio
	if ratio == "" || ratio == "adaptive" {
		ratio = "16:9"
	}
	body.Parameters.Size = Sizes[res][ratio]
	return body
}

// SubmitGeneration creates a video-synthesis task, once: any failure is returned to the job
// engine, which decides about another attempt.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	body := request(r)
	if body.Parameters.Size == "" && body.Parameters.Resolution == "" {
		// The catalog refuses such a request at submission; reaching here is a bug upstream of
		// this package, and DashScope would pick a size the reservation did not price.
		return "", &provider.Error{Code: "video_generation_failed", Message: "The requested size is not available for this model.", Kind: provider.ErrPermanent}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("dashscope: %w", err)
	}
	var out task
	if err := c.call(ctx, http.MethodPost, createPath, b, &out); err != nil {
		return "", err
	}
	if out.Output.TaskID == "" {
		return "", fmt.Errorf("dashscope: create answered without a task id: %w", provider.ErrTransient)
	}
	c.seen.add(out.Output.TaskID, r.IdempotencyKey)
	return out.Output.TaskID, nil
}

// PollGeneration reads a task and maps its state.
func (c *Client) PollGeneration(ctx context.Context, id string) (provider.Job, error) {
	var t task
	if err := c.call(ctx, http.MethodGet, tasksPath+"/"+url.PathEscape(id), nil, &t); err != nil {
		return provider.Job{}, err
	}
	switch t.Output.TaskStatus {
	case "PENDING":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "RUNNING":
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	case "SUCCEEDED":
		if t.Output.VideoURL == "" {
			return provider.Job{}, fmt.Errorf("dashscope: task succeeded without a video URL: %w", provider.ErrTransient)
		}
		// No tokens: DashScope bills seconds of output (usage.video_duration). The tenant is
		// billed the tokens of the measured video; the operator's cost is the reported seconds.
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{
			Source: provider.Source{URL: t.Output.VideoURL}, ContentType: "video/mp4", UsageSeconds: t.Usage.VideoDuration}}, nil
	case "FAILED", "CANCELED":
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: publicMessage(t.Output.Code)}, nil
	case "UNKNOWN":
		// The task id is unknown: past its 24 hours, or never made.
		return provider.Job{}, fmt.Errorf("dashscope: task %s is unknown: %w", id, provider.ErrUnknownJob)
	}
	return provider.Job{}, fmt.Errorf("dashscope: unknown task status %q: %w", t.Output.TaskStatus, provider.ErrTransient)
}

// Bounds of FindGeneration's search: how far before the recorded "about to submit" time a
// task's gmt_create may be (the clocks of two machines differ), and the pages read.
const (
	findSkew     = 2 * time.Minute
	findPageSize = 100
	findMaxPages = 10
	// taskRetention is how long DashScope keeps a task (its reference: 24 hours).
	taskRetention = 24 * time.Hour
)

// listStamp is the task list's start_time/end_time format (the SDKs' example: 20230420000000).
// The reference does not say their zone, so the range asked for is written to cover every zone
// from UTC to the service's UTC+8 (start in UTC, end in UTC+8), and tasks are then kept by
// their own gmt_create, an absolute time in milliseconds.
const listStamp = "20060102150405"

var serviceZone = time.FixedZone("UTC+8", 8*3600)

// ErrAmbiguous is FindGeneration's answer when the account has tasks of the model from the
// lost create's time: DashScope's tasks carry nothing of ours, so one of them may be that
// create's and none can be told apart. The task fails, refunded, rather than risk a second
// paid job.
var ErrAmbiguous = errors.New("dashscope: the account has tasks from the lost create's time and none can be told apart")

// listItem is one task of GET /api/v1/tasks (the SDKs' AsyncTaskInfo).
type listItem struct {
	TaskID    string `json:"task_id"`
	ModelName string `json:"model_name"`
	GmtCreate int64  `json:"gmt_create"` // milliseconds since the epoch
}

// FindGeneration implements provider.GenerationFinder as far as DashScope allows. DashScope
// has no idempotency key and its tasks carry no caller's tag. A create this client saw
// answered for the request's key is adopted. Otherwise the task list (GET /api/v1/tasks,
// filtered by model_name and a start_time..end_time range) answers whether the account made
// any task of the model since the lost create that this client cannot explain (answered to
// another create): none means that create made no job, so the task may be created again
// (there, or on another account); any means it may have, and a second create could be a
// second paid job, so the task fails, refunded (a permanent error), and the operator's
// possible loss is that one job. A list longer than findMaxPages pages is answered the same
// way: it cannot be read to its end.
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	if id, ok := c.seen.of(r.IdempotencyKey); ok && r.IdempotencyKey != "" {
		// The create was answered here; its answer never reached the task's record.
		return id, true, nil
	}
	if since.IsZero() {
		// No recorded submit time: every task DashScope still keeps (24 hours) may be it.
		since = time.Now().Add(-taskRetention)
	}
	oldest := since.Add(-findSkew)
	for page := 1; page <= findMaxPages; page++ {
		q := url.Values{}
		q.Set("model_name", r.Model)
		q.Set("start_time", oldest.UTC().Format(listStamp))
		q.Set("end_time", time.Now().Add(findSkew).In(serviceZone).Format(listStamp))
		q.Set("page_no", strconv.Itoa(page))
		q.Set("page_size", strconv.Itoa(findPageSize))
		var out struct {
			Total int        `json:"total"`
			Data  []listItem `json:"data"`
		}
		if err := c.call(ctx, http.MethodGet, tasksPath+"?"+q.Encode(), nil, &out); err != nil {
			var pe *provider.Error
			if errors.As(err, &pe) {
				// A refused list is not a refused task: ask again later.
				return "", false, fmt.Errorf("dashscope: listing tasks: %s: %w", pe.Code, provider.ErrTransient)
			}
			return "", false, err
		}
		for _, it := range out.Data {
			// A task without gmt_create, or of another model (a filter the service ignored),
			// counts as a candidate: only a task known to be elsewhere — older than the
			// window, of another model, or answered to another create — is left out.
			if c.seen.other(it.TaskID, r.IdempotencyKey) {
				continue
			}
			if it.GmtCreate == 0 || (it.GmtCreate >= oldest.UnixMilli() && (it.ModelName == "" || it.ModelName == r.Model)) {
				return "", false, ambiguous()
			}
		}
		if len(out.Data) < findPageSize {
			return "", false, nil
		}
	}
	return "", false, ambiguous()
}

func ambiguous() error {
	return &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.",
		Kind: fmt.Errorf("%w: %w", ErrAmbiguous, provider.ErrOutcomeUnknown)}
}

// checkTaskID is the task Check reads: a well-formed id no task has.
const checkTaskID = "00000000-0000-0000-0000-000000000000"

// Check makes one cheap authenticated call that starts no paid job: a read of a task id that
// does not exist, which DashScope answers 200 with task_status UNKNOWN for a working key, and
// 401 (or 403) for a refused one. A refusal of the id itself (a 4xx other than 401/403) also
// proves the key and the base URL: the service authenticated the call before reading the id.
func (c *Client) Check(ctx context.Context) error {
	var t task
	err := c.call(ctx, http.MethodGet, tasksPath+"/"+checkTaskID, nil, &t)
	switch {
	case errors.Is(err, provider.ErrPermanent):
		return nil
	case err != nil:
		return err
	case t.Output.TaskStatus == "":
		return errors.New("dashscope: the task read answered without output.task_status")
	}
	return nil
}

// call makes one call and decodes its 2xx JSON answer into out, with failures typed for the
// pipeline (rest.Classify). A create carries X-DashScope-Async: enable: video synthesis over
// HTTP is asynchronous only, and a create without it is refused.
func (c *Client) call(ctx context.Context, method, path string, body []byte, out any) error {
	r := rest.Request{Method: method, Path: path}
	if body != nil {
		r.Body, r.ContentType = bytes.NewReader(body), "application/json"
		r.Header = map[string]string{"X-DashScope-Async": "enable"}
	}
	return rest.Classify(c.api.JSON(ctx, r, out), func(se *rest.StatusError) error {
		var e apiError
		_ = json.Unmarshal(se.Body, &e)
		if e.Code == "Arrearage" {
			// A 400 that is the account's, not the request's: its payments are overdue. Its
			// tasks wait for the operator, as for a refused key.
			return fmt.Errorf("%w: the account is in arrears: %w", se, provider.ErrAccount)
		}
		return &provider.Error{Code: "video_generation_failed", Message: publicMessage(e.Code), Kind: provider.ErrPermanent}
	})
}

// publicMessage is a sanitized sentence for a refusal or a failed task: never the
// upstream's own text.
func publicMessage(code string) string {
	switch code {
	case "DataInspectionFailed", "IPInfringementSuspect":
		return "The upstream declined to generate this content."
	case "InvalidParameter", "InvalidParameter.DataInspection":
		return "The upstream rejected the request's parameters."
	}
	return "The video could not be generated."
}
