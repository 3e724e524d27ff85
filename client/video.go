package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Task states.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusExpired    = "expired"
)

// VideoRequest is a create request of one of the three video routes: *NativeRequest,
// *EnhancementRequest or *ProductionRequest.
type VideoRequest interface {
	// requestID points at the request's metadata.client_request_id.
	requestID() *string
}

// MediaURL is the {url} object of a content item.
type MediaURL struct {
	URL string `json:"url"`
}

// ContentItem is one ordered input of metadata.content. Prompts refer to items as @Image1,
// @Video1, @Audio1, numbered by order within each kind. URLs are https or asset://<Id>.
type ContentItem struct {
	Type     string    `json:"type"` // image_url, video_url or audio_url
	Role     string    `json:"role"` // reference_image, reference_video, reference_audio, first_frame, last_frame
	ImageURL *MediaURL `json:"image_url,omitempty"`
	VideoURL *MediaURL `json:"video_url,omitempty"`
	AudioURL *MediaURL `json:"audio_url,omitempty"`
}

// ReferenceImage is a reference_image item.
func ReferenceImage(u string) ContentItem {
	return ContentItem{Type: "image_url", Role: "reference_image", ImageURL: &MediaURL{u}}
}

// ReferenceVideo is a reference_video item; the service measures its duration itself.
func ReferenceVideo(u string) ContentItem {
	return ContentItem{Type: "video_url", Role: "reference_video", VideoURL: &MediaURL{u}}
}

// ReferenceAudio is a reference_audio item.
func ReferenceAudio(u string) ContentItem {
	return ContentItem{Type: "audio_url", Role: "reference_audio", AudioURL: &MediaURL{u}}
}

// FirstFrame is a first_frame image item.
func FirstFrame(u string) ContentItem {
	return ContentItem{Type: "image_url", Role: "first_frame", ImageURL: &MediaURL{u}}
}

// LastFrame is a last_frame image item: a constraint on generation, not a request for the
// output's last frame (that is ReturnLastFrame).
func LastFrame(u string) ContentItem {
	return ContentItem{Type: "image_url", Role: "last_frame", ImageURL: &MediaURL{u}}
}

// NativeRequest creates a native generation task (a native family alias).
type NativeRequest struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt,omitempty"`
	User   string `json:"user,omitempty"`
	// Seed is for the 2.0 families only; the 2.5 alias rejects it.
	Seed     *int64         `json:"seed,omitempty"`
	Metadata NativeMetadata `json:"metadata"`
}

// NativeMetadata holds the generation controls of a native request.
type NativeMetadata struct {
	Duration              *int          `json:"duration,omitempty"`   // -1 or 4–30 (2.5), 4–15 (2.0 families)
	Resolution            string        `json:"resolution,omitempty"` // 480p, 720p, 1080p, 4k
	Ratio                 string        `json:"ratio,omitempty"`      // adaptive, 16:9, 4:3, 1:1, 3:4, 9:16, 21:9
	GenerateAudio         *bool         `json:"generate_audio,omitempty"`
	Watermark             *bool         `json:"watermark,omitempty"`
	ClientRequestID       string        `json:"client_request_id,omitempty"`
	Content               []ContentItem `json:"content,omitempty"`
	OutputFormat          string        `json:"output_format,omitempty"` // mp4 or mov
	ReturnLastFrame       *bool         `json:"return_last_frame,omitempty"`
	OmniReferenceTaskType string        `json:"omni_reference_task_type,omitempty"` // auto, reference, edit, extend (2.5)
}

func (r *NativeRequest) requestID() *string { return &r.Metadata.ClientRequestID }

// EnhancementRequest creates a standalone enhancement task (an enhancement alias). It has no
// prompt: the service would ignore one.
type EnhancementRequest struct {
	Model    string              `json:"model"`
	Metadata EnhancementMetadata `json:"metadata"`
}

// EnhancementMetadata describes the source and the output. Exactly one of Resolution and
// ResolutionLimit is set.
type EnhancementMetadata struct {
	VideoURL string `json:"video_url"` // public direct http(s) URL; not asset://
	// Duration is the source's duration in seconds. The service measures the source too and
	// reserves for the larger of the two.
	Duration        float64 `json:"duration"`
	ToolVersion     string  `json:"tool_version,omitempty"`     // standard or professional; omitted on Lite
	Resolution      string  `json:"resolution,omitempty"`       // 1080p, 2k, 4k, 8k
	ResolutionLimit *int    `json:"resolution_limit,omitempty"` // short side in pixels
	FPS             *int    `json:"fps,omitempty"`
	BitrateLevel    string  `json:"bitrate_level,omitempty"` // low, medium, high
	Bitrate         *int    `json:"bitrate,omitempty"`       // kbit/s
	Scene           string  `json:"scene,omitempty"`         // Standard only
	EnhanceStyle    string  `json:"enhance_style,omitempty"` // hd or natural
	BitDepth        *int    `json:"bit_depth,omitempty"`     // Professional only
	ClientRequestID string  `json:"client_request_id,omitempty"`
}

func (r *EnhancementRequest) requestID() *string { return &r.Metadata.ClientRequestID }

// ProductionRequest creates a production task (a production tier alias): generation and
// enhancement as one task with one charge.
type ProductionRequest struct {
	Model    string             `json:"model"`
	Prompt   string             `json:"prompt,omitempty"`
	User     string             `json:"user,omitempty"`
	Metadata ProductionMetadata `json:"metadata"`
}

// ProductionMetadata holds the controls of a production request. Video references go only in
// Content (https or asset://); the service measures them.
type ProductionMetadata struct {
	Resolution            string        `json:"resolution"` // 1080p, 2k or 4k; required
	Duration              *int          `json:"duration,omitempty"`
	Content               []ContentItem `json:"content,omitempty"`
	OmniReferenceTaskType string        `json:"omni_reference_task_type,omitempty"`
	Ratio                 string        `json:"ratio,omitempty"`
	GenerateAudio         *bool         `json:"generate_audio,omitempty"`
	Watermark             *bool         `json:"watermark,omitempty"`
	FPS                   *int          `json:"fps,omitempty"`
	BitrateLevel          string        `json:"bitrate_level,omitempty"`
	Bitrate               *int          `json:"bitrate,omitempty"`
	Scene                 string        `json:"scene,omitempty"`         // Standard tier only
	EnhanceStyle          string        `json:"enhance_style,omitempty"` // Standard and Pro
	BitDepth              *int          `json:"bit_depth,omitempty"`     // Pro only
	ReturnLastFrame       *bool         `json:"return_last_frame,omitempty"`
	ClientRequestID       string        `json:"client_request_id,omitempty"`
}

func (r *ProductionRequest) requestID() *string { return &r.Metadata.ClientRequestID }

// Video is the video task resource, the answer of create and get on every route.
type Video struct {
	ID        string        `json:"id"`
	TaskID    string        `json:"task_id"`
	Object    string        `json:"object"`
	Model     string        `json:"model"`
	Status    string        `json:"status"`
	Progress  int           `json:"progress"`
	CreatedAt int64         `json:"created_at,omitempty"`
	Metadata  VideoMetadata `json:"metadata"`
	Usage     *VideoUsage   `json:"usage,omitempty"`
	Error     *VideoError   `json:"error,omitempty"`
}

// VideoMetadata is the route-dependent result. Native and production results are in URL (and
// LastFrameURL); enhancement results are in VideoURL with Duration, Resolution, FPS and
// ToolVersion. ResultURL reads the right one.
type VideoMetadata struct {
	ClientRequestID string   `json:"client_request_id,omitempty"`
	URL             string   `json:"url,omitempty"`
	LastFrameURL    string   `json:"last_frame_url,omitempty"`
	VideoURL        string   `json:"video_url,omitempty"`
	Duration        *float64 `json:"duration,omitempty"`
	Resolution      string   `json:"resolution,omitempty"`
	FPS             *float64 `json:"fps,omitempty"`
	ToolVersion     string   `json:"tool_version,omitempty"`
}

// VideoUsage is shown on completed native tasks.
type VideoUsage struct {
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// VideoError is the error object of a failed or expired task.
type VideoError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Terminal reports whether the task has stopped: completed, failed or expired.
func (v *Video) Terminal() bool {
	return v.Status == StatusCompleted || v.Status == StatusFailed || v.Status == StatusExpired
}

// ResultURL is the temporary link to the final video: metadata.url on native and production
// tasks, metadata.video_url on enhancement tasks; empty until the task has completed.
func (v *Video) ResultURL() string {
	if v.Status != StatusCompleted {
		return ""
	}
	if v.Metadata.URL != "" {
		return v.Metadata.URL
	}
	return v.Metadata.VideoURL
}

// Err is a *TaskError when the task failed or expired, nil otherwise.
func (v *Video) Err() error {
	if v.Status != StatusFailed && v.Status != StatusExpired {
		return nil
	}
	e := &TaskError{TaskID: v.ID, Status: v.Status, Code: "video_generation_failed"}
	if v.Error != nil {
		e.Code, e.Message = v.Error.Code, v.Error.Message
	}
	return e
}

// CreateVideo submits a video task and returns it as accepted (queued). When the request has
// no client_request_id, one is generated and written into req before the first attempt, so
// the caller can keep it; every retry sends the same id, and the service answers a replay
// with the task it already accepted.
func (c *Client) CreateVideo(ctx context.Context, req VideoRequest) (*Video, error) {
	if req == nil {
		return nil, errors.New("mediagen: CreateVideo: nil request")
	}
	if id := req.requestID(); *id == "" {
		*id = NewRequestID()
	}
	var v Video
	if err := c.do(ctx, http.MethodPost, "/v1/videos", req, &v, replayable); err != nil {
		return nil, err
	}
	return &v, nil
}

// GetVideo reads a task once. It never creates or charges anything.
func (c *Client) GetVideo(ctx context.Context, taskID string) (*Video, error) {
	if taskID == "" {
		return nil, errors.New("mediagen: GetVideo: empty task id")
	}
	var v Video
	if err := c.do(ctx, http.MethodGet, "/v1/videos/"+url.PathEscape(taskID), nil, &v, replayable); err != nil {
		return nil, err
	}
	return &v, nil
}

// maxPollFailures bounds the consecutive failed reads Wait tolerates (each already retried).
const maxPollFailures = 10

// Wait polls the task every PollInterval until it is terminal and returns it. A completed
// task returns a nil error; a failed or expired one returns the task and its *TaskError.
// onPoll, when non-nil, sees every read (for progress). Wait needs only the task id, so a
// process that restarts resumes with Wait(ctx, id) — never by creating the task again.
// When ctx ends, Wait returns ctx's error and the task keeps running on the service.
func (c *Client) Wait(ctx context.Context, taskID string, onPoll func(*Video)) (*Video, error) {
	failures := 0
	for {
		v, err := c.GetVideo(ctx, taskID)
		switch {
		case err == nil:
			failures = 0
			if onPoll != nil {
				onPoll(v)
			}
			if v.Terminal() {
				return v, v.Err()
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case isFinalForWait(err):
			return nil, err
		default:
			// The service or the network is unwell; the task is not affected. Keep waiting
			// for a bounded number of rounds.
			failures++
			if failures >= maxPollFailures {
				return nil, err
			}
		}
		if err := sleep(ctx, c.o.PollInterval); err != nil {
			return nil, err
		}
	}
}

// isFinalForWait: answers that another read cannot change (unknown task, bad key).
func isFinalForWait(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
}
