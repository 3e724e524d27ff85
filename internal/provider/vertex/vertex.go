// Package vertex is the upstream adapter of Google Veo on Vertex AI, typed REST of the wire
// format of Vertex AI's Veo reference
// (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/veo-video-generation)
// as the official Go SDK google.golang.org/genai (v1.77.0) sends and reads it in its Vertex AI
// mode (models.go generateVideosParametersToVertex, generateVideosConfigToVertex,
// generateVideosOperationFromVertex, videoFromVertex; operations.go GetVideosOperation,
// which reads a Veo operation with fetchPredictOperation; docs/upstreams.md#vertex-ai):
//
//   - auth: the account's service-account JSON key signs a JWT that the token URL exchanges
//     for an access token (OAuth2 JWT bearer grant, cloud.google.com/go/auth's 2-legged
//     flow), sent as Authorization: Bearer and kept until shortly before it expires;
//   - create: POST {base}/v1/projects/{project}/locations/{location}/publishers/google/
//     models/{model}:predictLongRunning with the Gemini API's body
//     (gemini.BuildRequest: instances[0] prompt and image {bytesBase64Encoded, mimeType},
//     parameters aspectRatio, resolution, durationSeconds, sampleCount) plus generateAudio for
//     Veo 3 → {"name": "projects/…/models/{model}/operations/{id}"};
//   - poll: POST {base}/v1/projects/…/models/{model}:fetchPredictOperation with
//     {"operationName"} → {"done", "error":{code,message,status}, "response":{"videos":
//     [{"bytesBase64Encoded"|"gcsUri", "mimeType"}], "raiMediaFilteredCount",
//     "raiMediaFilteredReasons"}}: without a storageUri parameter the video comes inline,
//     base64, in the finished operation.
//
// The adapter does not link the SDK (the fake's test drives it, proving the format): its
// client would retry and would not let a create's failure be classified. Vertex AI has no
// idempotency key and no list of a publisher model's operations, so a lost create is
// provider.ErrOutcomeUnknown (BlindCreator), never a second paid job.
package vertex

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/gemini"
	"mediagen/internal/provider/rest"
)

// APIVersion is the path prefix of every call: the reference's v1 (the SDK defaults to
// v1beta1, whose Veo methods are the same).
const APIVersion = "v1"

// MaxOperationBytes bounds a finished operation's answer, which carries the video inline as
// base64 (a third larger than the MP4): an 8 s Veo clip is a few MB, so 256 MiB is far off.
const MaxOperationBytes = 256 << 20

// Config configures a Client.
type Config struct {
	BaseURL  string // the regional API root: https://us-central1-aiplatform.googleapis.com
	Project  string // the Google Cloud project id
	Location string // the region: us-central1
	// Credentials is the service account's JSON key file's content: never logged.
	Credentials []byte
	// TokenURL is where the signed JWT is exchanged ("": the key file's token_uri, else
	// Google's DefaultTokenURL).
	TokenURL string
	// HTTP is the client for API and token calls (default: 30 s timeout). Its transport must
	// not retry.
	HTTP *http.Client
	// StorageURI, when set (gs://bucket/prefix/), is sent as the storageUri parameter: Veo
	// writes the video there and the finished operation names it (gcsUri) instead of carrying
	// it; it is read from Cloud Storage's JSON API at StorageURL (default DefaultStorageURL).
	StorageURI string
	StorageURL string
	// ReadImage reads a first frame (at most max bytes) to send inline: the service's fetch
	// policy, since the link is the tenant's. nil: the account takes no first frame.
	ReadImage gemini.ImageReader
	// RequestsPerSecond spaces this client's calls (0: no spacing).
	RequestsPerSecond float64
}

// Client calls one Vertex AI project's Veo models.
type Client struct {
	api        *rest.Client
	storage    *rest.Client // Cloud Storage's JSON API, when StorageURI is set
	storageURI string
	tokens     *tokens
	prefix     string // /v1/projects/{project}/locations/{location}/publishers/google/models/
	image      gemini.ImageReader
}

// reID: a project id or a location as Google spells them, safe in a path.
var reID = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// New returns a client of the account. The credentials are checked here: a file that is not
// a service account's key stops the service at start, naming nothing of its content.
func New(cfg Config) (*Client, error) {
	if !reID.MatchString(cfg.Project) || !reID.MatchString(cfg.Location) {
		return nil, errors.New("vertex: project and location must be Google Cloud ids such as my-project and us-central1")
	}
	sa, err := ParseServiceAccount(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("vertex: %w", err)
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	tokenURL := cfg.TokenURL
	if tokenURL == "" {
		tokenURL = sa.TokenURI
	}
	if tokenURL == "" {
		tokenURL = DefaultTokenURL
	}
	tk, err := newTokens(sa, tokenURL, hc)
	if err != nil {
		return nil, fmt.Errorf("vertex: %w", err)
	}
	api, err := rest.New(rest.Config{Name: "vertex", BaseURL: cfg.BaseURL, Token: tk.get, HTTP: hc, RequestsPerSecond: cfg.RequestsPerSecond})
	if err != nil {
		return nil, err
	}
	c := &Client{api: api, tokens: tk, image: cfg.ReadImage,
		prefix: "/" + APIVersion + "/projects/" + cfg.Project + "/locations/" + cfg.Location + "/publishers/google/models/"}
	if cfg.StorageURI != "" {
		if _, _, ok := ParseGCSURI(cfg.StorageURI); !ok {
			return nil, errors.New("vertex: the storage URI must be gs://bucket/ or gs://bucket/prefix/")
		}
		su := cfg.StorageURL
		if su == "" {
			su = DefaultStorageURL
		}
		if c.storage, err = rest.New(rest.Config{Name: "vertex storage", BaseURL: su, Token: tk.get, HTTP: hc}); err != nil {
			return nil, err
		}
		c.storageURI = cfg.StorageURI
	}
	return c, nil
}

// Video is one generated video of a finished operation (videoFromVertex).
type Video struct {
	GcsURI             string `json:"gcsUri"`
	BytesBase64Encoded string `json:"bytesBase64Encoded"`
	MimeType           string `json:"mimeType"`
}

// Operation is the long-running operation (generateVideosOperationFromVertex).
type Operation struct {
	Name     string         `json:"name"`
	Done     bool           `json:"done"`
	Error    *gemini.Status `json:"error"`
	Response *struct {
		Videos                  []Video  `json:"videos"`
		RaiMediaFilteredCount   int      `json:"raiMediaFilteredCount"`
		RaiMediaFilteredReasons []string `json:"raiMediaFilteredReasons"`
	} `json:"response"`
}

// veo3: the model makes sound, and Vertex AI takes (and for Veo 3 requires) generateAudio.
func veo3(model string) bool { return strings.HasPrefix(model, "veo-3.") }

// SubmitGeneration starts a long-running operation, once: any failure goes back to the job
// engine. The job id is the operation's name.
func (c *Client) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	if !validModel(r.Model) {
		return "", &provider.Error{Code: "InvalidParameter", Message: "The model is not available.", Kind: provider.ErrPermanent}
	}
	body, err := gemini.BuildRequest(ctx, r, c.image)
	if err != nil {
		return "", err
	}
	if veo3(r.Model) {
		audio := r.GenerateAudio == nil || *r.GenerateAudio // Veo 3's default: sound
		body.Parameters.GenerateAudio = &audio
	}
	body.Parameters.StorageURI = c.storageURI
	b, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("vertex: %w", err)
	}
	var op Operation
	if err := c.call(ctx, http.MethodPost, c.prefix+r.Model+":predictLongRunning", b, 1<<20, &op); err != nil {
		return "", err
	}
	if _, ok := c.resource(op.Name); !ok {
		return "", fmt.Errorf("vertex: create answered without an operation name: %w", provider.ErrTransient)
	}
	return op.Name, nil
}

// validModel: a model id as Google spells them, safe in a path.
func validModel(m string) bool {
	return m != "" && len(m) <= 128 && strings.Trim(m, "abcdefghijklmnopqrstuvwxyz0123456789.-_") == "" && !strings.Contains(m, "..")
}

// resource is the model path of an operation name the API gave (projects/{p}/locations/{l}/
// publishers/google/models/{m}/operations/{id}) — the operation is read at
// {model}:fetchPredictOperation — when the name is of this account's project and location
// and holds nothing that could leave the path.
func (c *Client) resource(name string) (string, bool) {
	model, id, ok := strings.Cut(strings.TrimPrefix(name, strings.TrimPrefix(c.prefix, "/"+APIVersion+"/")), "/operations/")
	if !ok || !strings.HasPrefix(name, strings.TrimPrefix(c.prefix, "/"+APIVersion+"/")) || !validModel(model) || id == "" ||
		strings.ContainsAny(id, "/?#%\\ ") || strings.Contains(id, "..") {
		return "", false
	}
	return c.prefix + model, true
}

// PollGeneration reads the operation and maps it. A finished operation without a video is
// the safety filter (raiMediaFilteredCount): failed, refunded.
func (c *Client) PollGeneration(ctx context.Context, name string) (provider.Job, error) {
	model, ok := c.resource(name)
	if !ok {
		return provider.Job{}, fmt.Errorf("vertex: job id %q is not an operation name of this account: %w", name, provider.ErrUnknownJob)
	}
	b, _ := json.Marshal(map[string]string{"operationName": name})
	var op Operation
	if err := c.call(ctx, http.MethodPost, model+":fetchPredictOperation", b, MaxOperationBytes, &op); err != nil {
		var pe *provider.Error
		if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
			return provider.Job{}, fmt.Errorf("vertex: operation %s: %w", name, provider.ErrUnknownJob)
		}
		return provider.Job{}, err
	}
	if !op.Done {
		return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
	}
	if op.Error != nil {
		return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: gemini.PublicMessage(op.Error.Status)}, nil
	}
	var v *Video
	if op.Response != nil {
		for i := range op.Response.Videos {
			if op.Response.Videos[i].BytesBase64Encoded != "" || op.Response.Videos[i].GcsURI != "" {
				v = &op.Response.Videos[i]
				break
			}
		}
		if v == nil && len(op.Response.Videos) == 0 && op.Response.RaiMediaFilteredCount > 0 {
			return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: "The upstream declined to generate this content."}, nil
		}
	}
	if v == nil {
		return provider.Job{}, fmt.Errorf("vertex: operation done without a video: %w", provider.ErrTransient)
	}
	typ := v.MimeType
	if typ == "" {
		typ = "video/mp4"
	}
	if v.BytesBase64Encoded == "" {
		open, err := c.gcsVideo(v.GcsURI)
		if err != nil {
			// Not in the account's bucket: not read with its token, and asking again
			// cannot change it.
			return provider.Job{Status: provider.StatusFailed, Progress: 100, ErrorCode: "video_generation_failed", ErrorMessage: "The video could not be generated."}, nil
		}
		return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{ContentType: typ, Source: provider.Source{Open: open}}}, nil
	}
	data, err := base64.StdEncoding.DecodeString(v.BytesBase64Encoded)
	if err != nil || len(data) == 0 {
		return provider.Job{}, fmt.Errorf("vertex: the video's bytes are not base64: %w", provider.ErrTransient)
	}
	return provider.Job{Status: provider.StatusSucceeded, Progress: 100, Output: &provider.Output{ContentType: typ,
		Source: provider.Source{Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}}}, nil
}

// FindGeneration implements provider.GenerationFinder for an API that cannot find a lost
// create: no idempotency key, and no list of a publisher model's operations (one is read by
// its name only, which a lost answer never gave us). The task ends, refunded; the possible
// job is the operator's upstream excess (docs/upstreams.md, "never a second paid job").
func (c *Client) FindGeneration(ctx context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	return "", false, &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.", Kind: provider.ErrOutcomeUnknown}
}

// BlindCreates implements provider.BlindCreator: a create refused outright (401/403, 429,
// 400) or whose token could not be had (never sent) made no job, and a lost one cannot be
// found.
func (c *Client) BlindCreates() {}

// CheckModel is the model the check reads an operation of.
const CheckModel = "veo-3.0-generate-001"

// Check fetches a token with the account's key and makes one cheap authenticated call: it
// reads a well-formed operation of Veo 3 that no job has. A refused key or project
// (401/403), a rate limit or a server error fail it; the API's 400/404 passes.
func (c *Client) Check(ctx context.Context) error {
	if _, err := c.tokens.get(ctx); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]string{"operationName": strings.TrimPrefix(c.prefix, "/"+APIVersion+"/") + CheckModel + "/operations/mediagen-check"})
	var op Operation
	err := c.call(ctx, http.MethodPost, c.prefix+CheckModel+":fetchPredictOperation", b, 1<<20, &op)
	if errors.Is(err, provider.ErrPermanent) {
		return nil
	}
	return err
}

// TokenFetches is how many access tokens the client fetched (tests: the cache and the
// refresh after a refused token).
func (c *Client) TokenFetches() int { return c.tokens.count() }

// call makes one call and decodes its 2xx JSON answer (at most max bytes) into out. A 401
// (the token expired or was revoked before its time) drops the token and makes the call once
// more with a new one: the API refused the first before doing anything, so a create is not
// repeated. A refused request (400, 404…) is a permanent provider.Error with a sanitized
// message from the error's status.
func (c *Client) call(ctx context.Context, method, path string, body []byte, max int64, out any) error {
	res, err := c.api.Do(ctx, rest.Request{Method: method, Path: path, Body: bytes.NewReader(body), ContentType: "application/json"})
	var se *rest.StatusError
	if errors.As(err, &se) && se.Status == http.StatusUnauthorized {
		c.tokens.drop()
		res, err = c.api.Do(ctx, rest.Request{Method: method, Path: path, Body: bytes.NewReader(body), ContentType: "application/json"})
	}
	if err != nil {
		return rest.Classify(err, func(se *rest.StatusError) error {
			var e struct {
				Error gemini.Status `json:"error"`
			}
			_ = json.Unmarshal(se.Body, &e)
			return &provider.Error{Code: "video_generation_failed", Message: gemini.PublicMessage(e.Error.Status), Kind: provider.ErrPermanent}
		})
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, max+1))
	if err != nil {
		return fmt.Errorf("vertex %s %s: reading the answer: %w", method, path, provider.ErrTransient)
	}
	if int64(len(data)) > max {
		return fmt.Errorf("vertex %s %s: the answer is larger than %d bytes: %w", method, path, max, provider.ErrTransient)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("vertex %s %s: malformed answer: %w", method, path, provider.ErrTransient)
	}
	return nil
}

// compile-time: what the pipeline needs of the client.
var (
	_ provider.BlindCreator     = (*Client)(nil)
	_ provider.GenerationFinder = (*Client)(nil)
)
