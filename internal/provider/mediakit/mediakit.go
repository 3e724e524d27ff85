// Package mediakit is the upstream adapter of Volcengine/BytePlus AI MediaKit's video
// enhancement tools (docs/upstreams.md#mediakit): a create (POST {base}/api/v1/tools/
// enhance-video-fast for Lite, POST {base}/api/v1/tools/enhance-video with tool_version
// standard or professional → {success, task_id, request_id}) and a task read (GET
// {base}/api/v1/tasks/{task_id} → status queued, running, completed with result.video_url,
// failed or canceled with error.code). Every call carries Authorization: Bearer with the
// account's API key (the vendor CLI's internal/cloud/request.go; endpoints
// https://amk.cn-beijing.volces.com on Volcengine, https://mediakit.ap-southeast-1.bytepluses.com
// on BytePlus).
//
// Field by field the create body is the tools' published parameters (Volcengine's "提交画质增强
// (标准版和专业版)任务 API" and "提交画质增强(极速版)任务 API",
// https://www.volcengine.com/docs/6448/2279230; github.com/volcengine/mediakit-cli
// skills/byted-mediakit-video/reference/enhance-video.md and enhance-video-fast.md):
// video_url, tool_version, resolution, resolution_limit, fps, bitrate_level, scene (standard
// only), bit_depth (professional only) and client_token, "用于幂等控制", at most 64 printable
// ASCII characters. A create repeated with the same client_token answers the task the first
// one made (the vendor's shared.md: reuse the token on a retry, a new one only to run again),
// so the adapter derives the token from the pipeline's idempotency key: a create whose answer
// was lost is simply made again and finds its task, never a second paid job.
package mediakit

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
	"strings"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Paths of the API, under the account's base URL.
const (
	PathFast     = "/api/v1/tools/enhance-video-fast" // Lite
	PathEnhance  = "/api/v1/tools/enhance-video"      // Standard and Professional (tool_version)
	PathTaskRoot = "/api/v1/tasks/"
)

// Tool versions sent on PathEnhance, by the pipeline's EnhanceRequest.ToolVersion; Lite
// ("") goes to PathFast and sends none.
var toolVersions = map[string]string{"standard": "standard", "professional": "professional"}

// CodeSourceChanged is the public code of a standalone source that measures longer when it
// is staged than when the task was accepted (as the local engines report it).
const CodeSourceChanged = "InvalidParameter.SourceChanged"

// Stage makes the copy of a standalone enhancement's source that the vendor fetches: it
// reads the tenant's URL, measures it (refusing, with a *provider.Error of code
// CodeSourceChanged, a source longer than maxSeconds when maxSeconds > 0), stores it in the
// service's own store under a key of the task (key is the pipeline's idempotency key) and
// returns a signed link to the stored copy. The vendor then reads what was measured and
// priced, never what the tenant's URL serves by the time the vendor fetches it.
type Stage func(ctx context.Context, key string, src provider.Source, maxSeconds float64) (string, error)

// Config configures a Client.
type Config struct {
	BaseURL string // the API root: https://amk.cn-beijing.volces.com
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
	// Stage copies a standalone source into the service's store (required for standalone
	// enhancement; a production's intermediate is in the store already).
	Stage Stage
}

// Client calls one AI MediaKit account.
type Client struct {
	api   *rest.Client
	stage Stage
}

var _ provider.Enhancer = (*Client)(nil)

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "mediakit", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	return &Client{api: api, stage: cfg.Stage}, nil
}

// createRequest is the body of both creates.
type createRequest struct {
	VideoURL        string `json:"video_url"`
	ToolVersion     string `json:"tool_version,omitempty"`
	Resolution      string `json:"resolution,omitempty"`
	ResolutionLimit int    `json:"resolution_limit,omitempty"`
	FPS             *int   `json:"fps,omitempty"`
	BitrateLevel    string `json:"bitrate_level,omitempty"`
	Scene           string `json:"scene,omitempty"`
	BitDepth        *int   `json:"bit_depth,omitempty"`
	ClientToken     string `json:"client_token"`
}

// apiError is the error object of a refused call or a failed task.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// envelope is every answer: a create's task_id, a task read's status and result.
type envelope struct {
	Success   *bool     `json:"success"`
	TaskID    string    `json:"task_id"`
	RequestID string    `json:"request_id"`
	Status    string    `json:"status"`
	Error     *apiError `json:"error"`
	Result    *struct {
		VideoURL    string  `json:"video_url"`
		Duration    float64 `json:"duration"`
		FPS         float64 `json:"fps"`
		Resolution  string  `json:"resolution"`
		ToolVersion string  `json:"tool_version"`
	} `json:"result"`
}

// ClientToken is the client_token of a job: the pipeline's idempotency key (task id and half)
// when it is at most 64 printable ASCII characters, else a digest of it.
func ClientToken(key string) string {
	ok := len(key) > 0 && len(key) <= 64
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > ' ' && key[i] < 0x7f
	}
	if ok {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "mg-" + hex.EncodeToString(sum[:24])
}

// request builds the create's path and body. Fields the vendor does not take (bitrate in
// kbps, enhance_style, 16-bit depth) are refused at submission by the catalog
// (catalog.KindMediaKit.Refuse), so none is silently dropped here.
func request(r provider.EnhanceRequest, videoURL string) (string, createRequest, error) {
	body := createRequest{VideoURL: videoURL, Resolution: r.Resolution, ResolutionLimit: r.ShortSide, FPS: r.FPS,
		BitrateLevel: r.BitrateLevel, ClientToken: ClientToken(r.IdempotencyKey)}
	if (body.Resolution == "") == (body.ResolutionLimit == 0) {
		return "", body, refused("Exactly one of resolution and resolution_limit is needed.")
	}
	if r.Bitrate != nil || r.EnhanceStyle != "" {
		return "", body, refused("This model takes no bitrate in kbps and no enhance_style.")
	}
	if r.ToolVersion == "" {
		return PathFast, body, nil
	}
	tv, ok := toolVersions[r.ToolVersion]
	if !ok {
		return "", body, refused("Unknown tool version.")
	}
	body.ToolVersion = tv
	if tv == "standard" {
		body.Scene = r.Scene
	}
	if tv == "professional" {
		body.BitDepth = r.BitDepth
	}
	return PathEnhance, body, nil
}

func refused(msg string) error {
	return &provider.Error{Code: "InvalidParameter", Message: msg, Kind: provider.ErrPermanent}
}

// SubmitEnhancement creates an enhancement task, once, with the job's client_token: a
// repeated create (its answer lost) answers the same task.
func (c *Client) SubmitEnhancement(ctx context.Context, r provider.EnhanceRequest) (string, error) {
	src, err := c.source(ctx, r)
	if err != nil {
		return "", err
	}
	path, body, err := request(r, src)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("mediakit: %w", err)
	}
	var out envelope
	if err := c.call(ctx, rest.Request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(b), ContentType: "application/json"}, &out); err != nil {
		return "", err
	}
	if err := businessError(out); err != nil {
		return "", err
	}
	if out.TaskID == "" {
		return "", fmt.Errorf("mediakit: create answered without a task_id: %w", provider.ErrTransient)
	}
	return out.TaskID, nil
}

// source is the link the vendor fetches: a production's intermediate is the service's own
// stored copy (its signed link); a standalone source is staged first (Stage).
func (c *Client) source(ctx context.Context, r provider.EnhanceRequest) (string, error) {
	if r.Source.Key != "" && r.Source.URL != "" {
		return r.Source.URL, nil
	}
	if c.stage == nil {
		return "", &provider.Error{Code: "video_generation_failed", Message: "The source video could not be prepared.", Kind: provider.ErrPermanent}
	}
	u, err := c.stage(ctx, r.IdempotencyKey, r.Source, r.MaxSourceSeconds)
	if err != nil {
		return "", fmt.Errorf("mediakit: stage the source: %w", err)
	}
	return u, nil
}

// PollEnhancement reads a task and maps its state. The result link is valid 24 hours and the
// pipeline copies it at once.
func (c *Client) PollEnhancement(ctx context.Context, job string) (provider.Job, error) {
	var t envelope
	if err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: PathTaskRoot + url.PathEscape(job)}, &t); err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
			// 404: the vendor has no such task: the pipeline submits again with the same
			// client_token.
			return provider.Job{}, fmt.Errorf("mediakit: task %s: %w", job, provider.ErrUnknownJob)
		}
		return provider.Job{}, err
	}
	if t.Success != nil && !*t.Success && t.Status == "" {
		if t.Error != nil && strings.Contains(strings.ToLower(t.Error.Code), "notfound") {
			return provider.Job{}, fmt.Errorf("mediakit: task %s: %w", job, provider.ErrUnknownJob)
		}
		if err := businessError(t); err != nil {
			return provider.Job{}, err
		}
	}
	switch strings.ToLower(t.Status) {
	case "queued", "pending", "submitted":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "running", "processing":
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	case "completed", "succeeded", "success":
		if t.Result == nil || t.Result.VideoURL == "" {
			return provider.Job{}, fmt.Errorf("mediakit: task completed without a video_url: %w", provider.ErrTransient)
		}
		out := &provider.Output{Source: provider.Source{URL: t.Result.VideoURL}, ContentType: "video/mp4", UsageSeconds: t.Result.Duration}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: out}, nil
	case "failed", "canceled", "cancelled":
		code, msg := failure(t.Error)
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: code, ErrorMessage: msg}, nil
	}
	return provider.Job{}, fmt.Errorf("mediakit: unknown task status %q: %w", t.Status, provider.ErrTransient)
}

// failure is the public code and sentence of a failed task, from the vendor's error code:
// never the vendor's own text.
func failure(e *apiError) (string, string) {
	code := ""
	if e != nil {
		code = e.Code
	}
	switch {
	case strings.HasPrefix(code, "InvalidParameter"), strings.Contains(strings.ToLower(code), "download"), strings.Contains(strings.ToLower(code), "input"):
		return "InvalidParameter", "The upstream could not use the source video."
	}
	return "video_generation_failed", "The video could not be enhanced."
}

// businessError types an answer with success false (the vendor's error-codes.md: an HTTP 2xx
// with success=false and error {code, message} is a failed call). Throttling, quota and
// internal errors are transient; anything else refuses the request. No task was made.
func businessError(e envelope) error {
	if e.Success == nil || *e.Success {
		return nil
	}
	code := ""
	if e.Error != nil {
		code = e.Error.Code
	}
	lc := strings.ToLower(code)
	switch {
	case strings.HasPrefix(lc, "invalid"), strings.HasPrefix(lc, "missing"), strings.HasPrefix(lc, "unsupported"):
		// the request's own fault, whatever else its name says (InvalidParameter.ResolutionLimit)
	case strings.Contains(lc, "unauthor"), strings.Contains(lc, "forbidden"), strings.Contains(lc, "auth"):
		return fmt.Errorf("mediakit: call refused (%s): %w", code, provider.ErrAccount)
	case strings.Contains(lc, "throttl"), strings.Contains(lc, "toomany"), strings.Contains(lc, "quota"), strings.Contains(lc, "limit"),
		strings.Contains(lc, "internal"), strings.Contains(lc, "unavailable"), strings.Contains(lc, "timeout"), strings.Contains(lc, "busy"):
		return fmt.Errorf("mediakit: call failed (%s): %w", code, provider.ErrTransient)
	}
	pc, msg := failure(e.Error)
	if pc == "video_generation_failed" {
		msg = "The upstream rejected the enhancement."
	}
	return &provider.Error{Code: pc, Message: msg, Kind: provider.ErrPermanent}
}

// checkTaskID is the task upstream check reads: an id no task has, so the call costs nothing
// and proves the key and the base URL (a refused key answers 401).
const checkTaskID = "mediagen-upstream-check"

// Check makes one cheap authenticated call: a read of a task that does not exist. A refused
// key, a rate limit or a server error fail it; the vendor's "no such task" passes.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.PollEnhancement(ctx, checkTaskID)
	if err == nil || errors.Is(err, provider.ErrUnknownJob) {
		return nil
	}
	return err
}

// call makes one call and decodes its 2xx JSON answer into out. HTTP failures are typed by
// rest.Classify: 400, 404, 409 and 422 are the request's, permanent, with a sanitized
// message (the vendor's error text is never passed on).
func (c *Client) call(ctx context.Context, r rest.Request, out *envelope) error {
	err := c.api.JSON(ctx, r, out)
	if err != nil {
		return rest.Classify(err, func(se *rest.StatusError) error {
			var e envelope
			_ = json.Unmarshal(se.Body, &e)
			if e.Error != nil && se.Status != http.StatusNotFound {
				if berr := businessError(envelope{Success: new(bool), Error: e.Error}); !errors.Is(berr, provider.ErrPermanent) {
					return fmt.Errorf("%w: %w", se, berr)
				}
			}
			code, msg := failure(e.Error)
			if code == "video_generation_failed" {
				msg = "The upstream rejected the enhancement."
			}
			return fmt.Errorf("%w: %w", se, &provider.Error{Code: code, Message: msg, Kind: provider.ErrPermanent})
		})
	}
	return nil
}
