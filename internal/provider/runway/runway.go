// Package runway is the upstream adapter of Runway's developer API, typed REST of the wire
// format the official Node SDK @runwayml/sdk speaks (test/runway-sdk pins it; its
// resources/{image-to-video,text-to-video,tasks}.d.ts are the reference carried over here,
// docs/upstreams.md#runway): a create (POST {base}/v1/image_to_video or /v1/text_to_video →
// {id}), a task read (GET {base}/v1/tasks/{id} → status PENDING, THROTTLED, RUNNING,
// SUCCEEDED with output URLs, FAILED with failure and failureCode, CANCELLED; terminal tasks
// carry cost.credits) and a cancel (DELETE {base}/v1/tasks/{id}). Every call carries
// Authorization: Bearer and X-Runway-Version. It never retries a create by itself: Runway has
// no idempotency key and no task list, so a retried create is a second paid job.
package runway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// Version is the X-Runway-Version every call carries: the API version the SDK pinned in
// test/runway-sdk sends by default (client.js, runwayVersion = '2024-11-06').
const Version = "2024-11-06"

// Config configures a Client.
type Config struct {
	BaseURL string // the API root: https://api.dev.runwayml.com
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
}

// Client calls one Runway account.
type Client struct{ api *rest.Client }

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "runway", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	return &Client{api: api}, nil
}

// Ratios of the API's ratio field (output pixels "W:H"), by the contract's ratio: the 720p
// frames every gen4 model makes from text and from an image.
var Ratios = map[string]string{"16:9": "1280:720", "9:16": "720:1280"}

// Durations the kind asks for (seconds): the values gen4_turbo and gen4.5 both take.
var Durations = []int{5, 10}

// DefaultDuration is sent when the request leaves the duration to the model (-1): gen4.5
// requires the field, and 5 s is the shortest (cheapest) of Durations.
const DefaultDuration = 5

// ImageOnly are the models that take no text-only create (no text_to_video variant in the
// SDK's TextToVideoCreateParams): such a request is refused before any call.
var ImageOnly = []string{"gen4_turbo", "gen3a_turbo"}

// CreditsPerSecond is Runway's published price of each model in credits per second of
// output (docs/upstreams.md#runway): a terminal task's cost.credits divided by it is the
// seconds Runway billed (Output.UsageSeconds). An unlisted model reports no usage seconds.
var CreditsPerSecond = map[string]float64{"gen4_turbo": 5, "gen4.5": 12, "gen3a_turbo": 5}

// promptImage is one element of promptImage's array form.
type promptImage struct {
	URI      string `json:"uri"`
	Position string `json:"position"`
}

// createRequest is the body of both creates (image_to_video adds promptImage).
type createRequest struct {
	Model       string        `json:"model"`
	PromptText  string        `json:"promptText,omitempty"`
	PromptImage []promptImage `json:"promptImage,omitempty"`
	Ratio       string        `json:"ratio"`
	Duration    int           `json:"duration"`
	Seed        *int64        `json:"seed,omitempty"`
}

// task is the body of GET /v1/tasks/{id}.
type task struct {
	ID          string   `json:"id"`
	Status      string   `json:"status"`
	Progress    *float64 `json:"progress"`
	Output      []string `json:"output"`
	Failure     string   `json:"failure"`
	FailureCode string   `json:"failureCode"`
	Cost        *struct {
		Credits float64 `json:"credits"`
	} `json:"cost"`
}

// request builds the create body and its path: image_to_video when the request has a first
// frame, else text_to_video.
func request(r provider.GenerateRequest) (string, createRequest, error) {
	body := createRequest{Model: r.Model, PromptText: r.Prompt, Ratio: Ratios[r.Ratio], Duration: r.Duration, Seed: r.Seed}
	if body.Duration <= 0 {
		body.Duration = DefaultDuration
	}
	for _, in := range r.Inputs {
		if in.Type == "image_url" && in.Role == "first_frame" {
			body.PromptImage = append(body.PromptImage, promptImage{URI: in.Source.URL, Position: "first"})
		}
	}
	if body.Ratio == "" {
		body.Ratio = Ratios["16:9"]
	}
	if len(body.PromptImage) > 0 {
		return "/v1/image_to_video", body, nil
	}
	for _, m := range ImageOnly {
		if r.Model == m {
			return "", body, &provider.Error{Code: "InvalidParameter", Message: "This model needs a first_frame image.", Kind: provider.ErrPermanent}
		}
	}
	return "/v1/text_to_video", body, nil
}

// SubmitGeneration creates a video task, once: any failure goes back to the job engine.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	path, body, err := request(r)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("runway: %w", err)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := c.call(ctx, rest.Request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(b), ContentType: "application/json"}, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("runway: create answered without a task id: %w", provider.ErrTransient)
	}
	return jobID(r.Model, out.ID), nil
}

// PollGeneration reads a task and maps its state. Runway's output URLs expire (24-48 h, the
// SDK says) and a fresh read gives fresh ones, so every poll reads them anew.
func (c *Client) PollGeneration(ctx context.Context, job string) (provider.Job, error) {
	model, id := splitJobID(job)
	var t task
	if err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/v1/tasks/" + url.PathEscape(id)}, &t); err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
			// 404: Runway no longer has the task (deleted or never made).
			return provider.Job{}, fmt.Errorf("runway: task %s: %w", id, provider.ErrUnknownJob)
		}
		return provider.Job{}, err
	}
	switch t.Status {
	case "PENDING", "THROTTLED":
		return provider.Job{Status: provider.StatusQueued}, nil
	case "RUNNING":
		p := 50
		if t.Progress != nil {
			p = min(99, max(0, int(*t.Progress*100)))
		}
		return provider.Job{Status: provider.StatusRunning, Progress: p}, nil
	case "SUCCEEDED":
		if len(t.Output) == 0 || t.Output[0] == "" {
			return provider.Job{}, fmt.Errorf("runway: task succeeded without an output: %w", provider.ErrTransient)
		}
		out := &provider.Output{Source: provider.Source{URL: t.Output[0]}, ContentType: "video/mp4"}
		if cps := CreditsPerSecond[model]; cps > 0 && t.Cost != nil {
			out.UsageSeconds = t.Cost.Credits / cps
		}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: out}, nil
	case "FAILED":
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: publicMessage(t.FailureCode)}, nil
	case "CANCELLED":
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: "The video could not be generated."}, nil
	}
	return provider.Job{}, fmt.Errorf("runway: unknown task status %q: %w", t.Status, provider.ErrTransient)
}

// jobID is the job id the adapter hands the pipeline, "model/taskid": a task read does not
// name its model, whose price per second turns the task's credits into usage seconds.
func jobID(model, id string) string { return model + "/" + id }

// splitJobID reads a jobID back; a bare task id has no model.
func splitJobID(job string) (model, id string) {
	if m, id, ok := strings.Cut(job, "/"); ok {
		return m, id
	}
	return "", job
}

// CancelGeneration cancels a task that is pending, throttled or running (DELETE
// /v1/tasks/{id}; on a finished task Runway deletes it instead). A task already gone is not
// an error.
func (c *Client) CancelGeneration(ctx context.Context, job string) error {
	_, id := splitJobID(job)
	res, err := c.api.Do(ctx, rest.Request{Method: http.MethodDelete, Path: "/v1/tasks/" + url.PathEscape(id), Header: versionHeader})
	if err != nil {
		var se *rest.StatusError
		if errors.As(err, &se) && se.Status == http.StatusNotFound {
			return nil
		}
		return rest.Classify(err, func(se *rest.StatusError) error {
			return fmt.Errorf("%w: %w", se, provider.ErrPermanent)
		})
	}
	return res.Body.Close()
}

// FindGeneration implements provider.GenerationFinder for an API that has no way to find a
// lost create: no idempotency key, and no list of tasks (the SDK's Tasks resource has
// retrieve and delete only). A create whose answer was lost may have made a paid job;
// creating again may make a second. So the answer is ErrOutcomeUnknown: the task ends
// (refunded) and the possible job is recorded as the operator's upstream excess
// (docs/upstreams.md, "never a second paid job").
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	return "", false, &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.", Kind: provider.ErrOutcomeUnknown}
}

// BlindCreates implements provider.BlindCreator: a create refused outright (400, 401, 429)
// made no job, and a lost one cannot be found.
func (c *Client) BlindCreates() {}

// checkTaskID is the task upstream check reads: a well-formed UUID no task has, so the call
// costs nothing and proves the key and the base URL (a refused key answers 401).
const checkTaskID = "00000000-0000-0000-0000-000000000000"

// Check makes one cheap authenticated call: a read of a task that does not exist. A refused
// key, a rate limit or a server error fail it; the API's 404 passes.
func (c *Client) Check(ctx context.Context) error {
	var t task
	err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/v1/tasks/" + checkTaskID}, &t)
	if err != nil && errors.Is(err, provider.ErrPermanent) {
		return nil
	}
	return err
}

// versionHeader is the header every call carries.
var versionHeader = map[string]string{"X-Runway-Version": Version}

// call makes one call with the version header and decodes its 2xx JSON answer into out.
// HTTP failures are typed by rest.Classify: 400 (validation) and 404 are the request's,
// permanent, with a sanitized message (Runway's {"error": …} text is never passed on).
func (c *Client) call(ctx context.Context, r rest.Request, out any) error {
	r.Header = versionHeader
	err := c.api.JSON(ctx, r, out)
	if err != nil {
		return rest.Classify(err, func(se *rest.StatusError) error {
			msg := "The upstream rejected the request's parameters."
			if se.Status == http.StatusNotFound {
				msg = "The video could not be generated."
			}
			return &provider.Error{Code: "video_generation_failed", Message: msg, Kind: provider.ErrPermanent}
		})
	}
	return nil
}

// publicMessage is a sanitized sentence for a task failure, from its failureCode (Runway's
// task-failures page): never the upstream's own text.
func publicMessage(code string) string {
	switch {
	case strings.HasPrefix(code, "SAFETY."), strings.HasPrefix(code, "INPUT_PREPROCESSING.SAFETY"):
		return "The upstream declined to generate this content."
	case strings.HasPrefix(code, "ASSET.INVALID"), strings.HasPrefix(code, "INPUT_PREPROCESSING"):
		return "The upstream could not read the request's inputs."
	}
	return "The video could not be generated."
}
