package contract

// The response bodies of the video routes. The video service fills them from its records
// (video.View); the edge writes them as they are.

// VideoTask is the contract's video task resource: the answer of POST /v1/videos, GET
// /v1/videos/{task_id} and each item of GET /v1/videos.
type VideoTask struct {
	ID        string             `json:"id"`
	TaskID    string             `json:"task_id"`
	Object    string             `json:"object"`
	Model     string             `json:"model"`
	Status    string             `json:"status"`
	Progress  int                `json:"progress"`
	CreatedAt int64              `json:"created_at"`
	Metadata  *VideoTaskMetadata `json:"metadata,omitempty"`
	Usage     *VideoTaskUsage    `json:"usage,omitempty"`
	Error     *TaskError         `json:"error,omitempty"`
	// The fields below are OpenAI's (what its SDKs read on a video); the contract has none of
	// these names. Each is omitted when unknown, never null.
	// Seconds is the measured length of the result, as a string like OpenAI's "8".
	Seconds string `json:"seconds,omitempty"`
	// Size is the result's "WxH".
	Size string `json:"size,omitempty"`
	// CompletedAt is when the task finished (Unix seconds), on a completed task.
	CompletedAt int64 `json:"completed_at,omitzero"`
	// ExpiresAt is when the result links in this answer expire (Unix seconds).
	ExpiresAt int64 `json:"expires_at,omitzero"`
	// DeletedAt is when DELETE /v1/videos/{id} removed the result (Unix seconds): such a
	// completed task shows no result links.
	DeletedAt int64 `json:"deleted_at,omitzero"`
}

// VideoTaskMetadata is route-dependent; absent fields are omitted.
type VideoTaskMetadata struct {
	ClientRequestID string   `json:"client_request_id,omitempty"`
	URL             string   `json:"url,omitempty"`
	LastFrameURL    string   `json:"last_frame_url,omitempty"`
	VideoURL        string   `json:"video_url,omitempty"`
	Duration        *float64 `json:"duration,omitempty"`
	Resolution      string   `json:"resolution,omitempty"`
	FPS             *float64 `json:"fps,omitempty"`
	ToolVersion     string   `json:"tool_version,omitempty"`
}

// VideoTaskUsage is shown on completed native tasks.
type VideoTaskUsage struct {
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// TaskError is present on failed and expired tasks.
type TaskError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// VideoList is GET /v1/videos's answer: the shape OpenAI's SDKs page through. first_id and
// last_id are omitted on an empty page (no nulls).
type VideoList struct {
	Object  string      `json:"object"`
	Data    []VideoTask `json:"data"`
	FirstID string      `json:"first_id,omitempty"`
	LastID  string      `json:"last_id,omitempty"`
	HasMore bool        `json:"has_more"`
}

// VideoDeleted is DELETE /v1/videos/{task_id}'s answer, in OpenAI's shape.
type VideoDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
