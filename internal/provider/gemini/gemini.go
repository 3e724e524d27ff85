// Package gemini is the upstream adapter of Google Veo through the Gemini API, typed REST of
// the wire format the official Go SDK google.golang.org/genai (v1.77.0) sends and reads in
// its Gemini API mode (models.go generateVideos and its ...ToMldev/...FromMldev converters,
// operations.go GetVideosOperation, files.go Download; docs/upstreams.md#gemini):
//
//   - create: POST {base}/v1beta/models/{model}:predictLongRunning with
//     {"instances":[{"prompt","image":{"bytesBase64Encoded","mimeType"}}],
//     "parameters":{"aspectRatio","resolution","durationSeconds","sampleCount"}} → a
//     long-running operation {"name":"models/{model}/operations/{id}"};
//   - poll: GET {base}/v1beta/{operation name} → {"done", "error":{code,message,status},
//     "response":{"generateVideoResponse":{"generatedSamples":[{"video":{"uri"}}],
//     "raiMediaFilteredCount","raiMediaFilteredReasons"}}};
//   - result: GET {video uri} (…/v1beta/files/{id}:download?alt=media) with the key.
//
// The key goes in x-goog-api-key. The adapter does not link the SDK: the SDK is what the
// fake's test drives (gemfake), proving the format; production needs only net/http, and the
// SDK's own client would not give us control over retries of a create. The Gemini API has no
// idempotency key and no list of operations, so a lost create is provider.ErrOutcomeUnknown
// (BlindCreator), never a second paid job.
package gemini

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// APIVersion is the path prefix of every call: the SDK's default for the Gemini API.
const APIVersion = "v1beta"

// MaxImageBytes bounds a first frame read to send inline: the Gemini API takes a request of
// at most 20 MB, and base64 grows the image by a third, so 14 MiB keeps the body under it.
const MaxImageBytes = 14 << 20

// Config configures a Client.
type Config struct {
	BaseURL string // the API root: https://generativelanguage.googleapis.com
	APIKey  string
	// HTTP is the client for API calls (default: 30 s timeout). Its transport must not retry.
	HTTP *http.Client
	// ReadImage reads a first frame (at most max bytes) to send inline: the service's fetch
	// policy, since the link is the tenant's. nil: the account takes no first frame.
	ReadImage func(ctx context.Context, src provider.Source, max int64) ([]byte, error)
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
}

// Client calls one Gemini API account.
type Client struct {
	api   *rest.Client
	base  *url.URL
	key   string
	http  *http.Client
	image ImageReader
}

// New returns a client of the account.
func New(cfg Config) (*Client, error) {
	api, err := rest.New(rest.Config{Name: "gemini", BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, KeyHeader: "x-goog-api-key", HTTP: cfg.HTTP, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	base, _ := url.Parse(cfg.BaseURL) // rest.New checked it
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{api: api, base: base, key: cfg.APIKey, http: hc, image: cfg.ReadImage}, nil
}

// image is an Image of the SDK in the Gemini API's form (imageToMldev).
type image struct {
	BytesBase64Encoded string `json:"bytesBase64Encoded"`
	MimeType           string `json:"mimeType,omitempty"`
}

type instance struct {
	Prompt string `json:"prompt,omitempty"`
	Image  *image `json:"image,omitempty"`
}

// parameters are GenerateVideosConfig's fields the Gemini API takes
// (generateVideosConfigToMldev). seed, generateAudio and outputGcsUri are refused by the SDK
// in this mode, so the Gemini API is never sent them; Vertex AI (package vertex), whose body
// is otherwise the same (generateVideosConfigToVertex), takes generateAudio and storageUri,
// which it sets.
type parameters struct {
	AspectRatio     string `json:"aspectRatio,omitempty"`
	Resolution      string `json:"resolution,omitempty"`
	DurationSeconds int    `json:"durationSeconds,omitempty"`
	SampleCount     int    `json:"sampleCount,omitempty"`
	GenerateAudio   *bool  `json:"generateAudio,omitempty"`
	StorageURI      string `json:"storageUri,omitempty"`
}

// CreateRequest is the body of POST …:predictLongRunning.
type CreateRequest struct {
	Instances  []instance `json:"instances"`
	Parameters parameters `json:"parameters"`
}

// Status is google.rpc.Status, the error of an answer or of a finished operation.
type Status struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

// Operation is the long-running operation (generateVideosOperationFromMldev).
type Operation struct {
	Name     string  `json:"name"`
	Done     bool    `json:"done"`
	Error    *Status `json:"error"`
	Response *struct {
		GenerateVideoResponse *struct {
			GeneratedSamples []struct {
				Video *struct {
					URI      string `json:"uri"`
					Encoding string `json:"encoding"`
				} `json:"video"`
			} `json:"generatedSamples"`
			RaiMediaFilteredCount   int      `json:"raiMediaFilteredCount"`
			RaiMediaFilteredReasons []string `json:"raiMediaFilteredReasons"`
		} `json:"generateVideoResponse"`
	} `json:"response"`
}

// ImageReader reads a first frame (at most max bytes) to send inline.
type ImageReader func(ctx context.Context, src provider.Source, max int64) ([]byte, error)

// BuildRequest builds the create body of Veo's predictLongRunning, the same on the Gemini API
// and on Vertex AI (imageToMldev and imageToVertex both send bytesBase64Encoded and
// mimeType). One sample: a task pays for one video. read nil: the account takes no first
// frame.
func BuildRequest(ctx context.Context, r provider.GenerateRequest, read ImageReader) (CreateRequest, error) {
	in := instance{Prompt: r.Prompt}
	for _, it := range r.Inputs {
		if it.Type == "image_url" && it.Role == "first_frame" {
			img, err := readImage(ctx, read, it.Source)
			if err != nil {
				return CreateRequest{}, err
			}
			in.Image = img
		}
	}
	p := parameters{Resolution: r.Resolution, SampleCount: 1}
	switch r.Ratio {
	case "16:9", "9:16":
		p.AspectRatio = r.Ratio
	case "adaptive": // what adaptive stands for (contract/dims.go), the API's default
		p.AspectRatio = "16:9"
	}
	if r.Duration > 0 {
		p.DurationSeconds = r.Duration
	}
	return CreateRequest{Instances: []instance{in}, Parameters: p}, nil
}

// readImage reads a first frame to send inline: the API takes image bytes, not a link.
func readImage(ctx context.Context, read ImageReader, src provider.Source) (*image, error) {
	if read == nil {
		return nil, &provider.Error{Code: "InvalidParameter", Message: "This model takes no first frame here.", Kind: provider.ErrPermanent}
	}
	data, err := read(ctx, src, MaxImageBytes)
	if errors.Is(err, provider.ErrTooLarge) {
		return nil, &provider.Error{Code: "InvalidParameter", Message: "The first frame is larger than this model takes.", Kind: provider.ErrPermanent}
	}
	var pe *provider.Error
	if errors.As(err, &pe) {
		return nil, pe
	}
	if err != nil {
		return nil, fmt.Errorf("reading the first frame: %w", err)
	}
	typ, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if !strings.HasPrefix(typ, "image/") {
		return nil, &provider.Error{Code: "InvalidParameter", Message: "The first frame is not an image.", Kind: provider.ErrPermanent}
	}
	return &image{BytesBase64Encoded: base64.StdEncoding.EncodeToString(data), MimeType: typ}, nil
}

// SubmitGeneration starts a long-running operation, once: any failure goes back to the job
// engine. The job id is the operation's name.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	body, err := BuildRequest(ctx, r, c.image)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("gemini: %w", err)
	}
	var op Operation
	path := "/" + APIVersion + "/models/" + url.PathEscape(r.Model) + ":predictLongRunning"
	if err := c.call(ctx, rest.Request{Method: http.MethodPost, Path: path, Body: bytes.NewReader(b), ContentType: "application/json"}, &op); err != nil {
		return "", err
	}
	if !validName(op.Name) {
		return "", fmt.Errorf("gemini: create answered without an operation name: %w", provider.ErrTransient)
	}
	return op.Name, nil
}

// validName: an operation name as the API gives it (models/{model}/operations/{id}), which
// is put in a path as it is, so nothing that could leave /v1beta/.
func validName(n string) bool {
	model, id, ok := strings.Cut(strings.TrimPrefix(n, "models/"), "/operations/")
	return ok && strings.HasPrefix(n, "models/") && model != "" && id != "" &&
		!strings.ContainsAny(n, "?#%\\ ") && !strings.Contains(n, "..") && !strings.Contains(id, "/")
}

// PollGeneration reads the operation and maps it. A finished operation without a sample is
// the API's safety filter (raiMediaFilteredCount): failed, refunded.
func (c *Client) PollGeneration(ctx context.Context, name string) (provider.Job, error) {
	if !validName(name) {
		return provider.Job{}, fmt.Errorf("gemini: job id %q is not an operation name: %w", name, provider.ErrUnknownJob)
	}
	var op Operation
	if err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/" + APIVersion + "/" + name}, &op); err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
			return provider.Job{}, fmt.Errorf("gemini: operation %s: %w", name, provider.ErrUnknownJob)
		}
		return provider.Job{}, err
	}
	if !op.Done {
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	}
	if op.Error != nil {
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: PublicMessage(op.Error.Status)}, nil
	}
	var uri string
	if op.Response != nil && op.Response.GenerateVideoResponse != nil {
		for _, s := range op.Response.GenerateVideoResponse.GeneratedSamples {
			if s.Video != nil && s.Video.URI != "" {
				uri = s.Video.URI
				break
			}
		}
		if uri == "" && op.Response.GenerateVideoResponse.RaiMediaFilteredCount > 0 {
			return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: "The upstream declined to generate this content."}, nil
		}
	}
	if uri == "" {
		return provider.Job{}, fmt.Errorf("gemini: operation done without a video: %w", provider.ErrTransient)
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != c.base.Scheme || u.Host != c.base.Host {
		// The key is only ever sent to the account's own API root.
		return provider.Job{}, fmt.Errorf("gemini: the video is not on the account's API host: %w", provider.ErrTransient)
	}
	return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{ContentType: "video/mp4",
		Source: provider.Source{Open: func(ctx context.Context) (io.ReadCloser, error) { return c.download(ctx, uri) }}}}, nil
}

// download reads the video with the key (files.go Download: files/{id}:download?alt=media).
func (c *Client) download(ctx context.Context, uri string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	req.Header.Set("x-goog-api-key", c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("gemini: downloading the video: %s: %w", strings.ReplaceAll(err.Error(), c.key, "[key]"), provider.ErrTransient)
	}
	if res.StatusCode/100 != 2 {
		res.Body.Close()
		return nil, fmt.Errorf("gemini: downloading the video: HTTP %d: %w", res.StatusCode, provider.ErrTransient)
	}
	return res.Body, nil
}

// FindGeneration implements provider.GenerationFinder for an API that cannot find a lost
// create: no idempotency key, and no list of operations (an operation is read by its name
// only, which a lost answer never gave us). The task ends, refunded; the possible job is the
// operator's upstream excess (docs/upstreams.md, "never a second paid job").
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	return "", false, &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.", Kind: provider.ErrOutcomeUnknown}
}

// BlindCreates implements provider.BlindCreator: a create refused outright (401/403, 429,
// 400) made no job, and a lost one cannot be found.
func (c *Client) BlindCreates() {}

// Check makes one cheap authenticated call: it reads a well-formed operation no job has. A
// refused key (401/403), a rate limit or a server error fail it; the API's 404 passes.
func (c *Client) Check(ctx context.Context) error {
	var op Operation
	err := c.call(ctx, rest.Request{Method: http.MethodGet, Path: "/" + APIVersion + "/models/veo-3.0-generate-001/operations/mediagen-check"}, &op)
	if errors.Is(err, provider.ErrPermanent) {
		return nil
	}
	return err
}

// call makes one call and decodes its 2xx JSON answer into out; a refused request (400,
// 404…) is a permanent provider.Error with a sanitized message from the error's status.
func (c *Client) call(ctx context.Context, r rest.Request, out any) error {
	err := c.api.JSON(ctx, r, out)
	if err == nil {
		return nil
	}
	return rest.Classify(err, func(se *rest.StatusError) error {
		var e struct {
			Error Status `json:"error"`
		}
		_ = json.Unmarshal(se.Body, &e)
		return &provider.Error{Code: "video_generation_failed", Message: PublicMessage(e.Error.Status), Kind: provider.ErrPermanent}
	})
}

// PublicMessage is a sanitized sentence for a refusal or a failed operation, from the
// google.rpc status name: never the upstream's own text (Vertex AI's too).
func PublicMessage(status string) string {
	switch status {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return "The upstream rejected the request's parameters."
	}
	return "The video could not be generated."
}
