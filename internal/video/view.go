package video

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// Result is what a completed task stored: keys of files in the service's own storage and the
// measured facts of the output. It never changes once the task completed.
type Result struct {
	VideoKey     string `json:"video_key"`
	LastFrameKey string `json:"last_frame_key,omitempty"`
	// ThumbnailKey is the first frame as a JPEG, made at completion: variant=thumbnail of
	// GET /v1/videos/{id}/content. Empty for results completed before it was made.
	ThumbnailKey     string  `json:"thumbnail_key,omitempty"`
	Duration         float64 `json:"duration"`
	FPS              float64 `json:"fps"`
	Width            int     `json:"width"`
	Height           int     `json:"height"`
	Resolution       string  `json:"resolution,omitempty"`
	ToolVersion      string  `json:"tool_version,omitempty"`
	CompletionTokens int64   `json:"completion_tokens,omitempty"`
	// DeletedAt (Unix seconds) marks files removed by DELETE /v1/videos/{id}: never linked
	// again.
	DeletedAt int64 `json:"deleted_at,omitempty"`
}

// Linker mints a fresh temporary link to a stored file.
type Linker interface {
	Link(key string) string
}

// View renders a task for its owner. Links are minted fresh on every call, pointing at the
// same stored files.
func View(t store.Task, links Linker) contract.VideoTask {
	v := contract.VideoTask{ID: t.ID, TaskID: t.ID, Object: "video", Model: t.Model, Status: t.Status,
		Progress: t.Progress, CreatedAt: t.CreatedAt.Unix()}
	md := &contract.VideoTaskMetadata{ClientRequestID: t.ClientRequestID}
	if t.Status == store.StatusCompleted && len(t.Result) > 0 && links != nil {
		var r Result
		if err := json.Unmarshal(t.Result, &r); err == nil {
			fillOpenAI(&v, r)
			if t.Route == "native" {
				// Usage describes the charge, not a file: it stays after a delete.
				v.Usage = &contract.VideoTaskUsage{CompletionTokens: r.CompletionTokens, TotalTokens: r.CompletionTokens}
			}
			v.DeletedAt = r.DeletedAt
			fillResult(md, t.Route, r, links)
			if e, ok := links.(interface{ Expiry() time.Time }); ok && r.DeletedAt == 0 {
				v.ExpiresAt = e.Expiry().Unix()
			}
		}
		if !t.FinishedAt.IsZero() {
			v.CompletedAt = t.FinishedAt.Unix()
		}
	}
	if *md != (contract.VideoTaskMetadata{}) {
		v.Metadata = md
	}
	if t.Status == store.StatusFailed || t.Status == store.StatusExpired {
		code, msg := t.ErrorCode, t.ErrorMessage
		if code == "" {
			code = "video_generation_failed"
		}
		if msg == "" {
			msg = "The video task did not complete."
		}
		v.Error = &contract.TaskError{Code: code, Message: msg}
	}
	return v
}

// fillOpenAI sets OpenAI's seconds and size from the measured result; they stay after the
// files are deleted (they describe the task, not a link).
func fillOpenAI(v *contract.VideoTask, r Result) {
	if r.Duration > 0 {
		v.Seconds = strconv.FormatFloat(math.Round(r.Duration*1000)/1000, 'f', -1, 64)
	}
	if r.Width > 0 && r.Height > 0 {
		v.Size = strconv.Itoa(r.Width) + "x" + strconv.Itoa(r.Height)
	}
}

// fillResult sets the route's result metadata: links to the files, minted now, unless the
// files were deleted; the enhancement's measured facts stay either way.
func fillResult(md *contract.VideoTaskMetadata, route string, r Result, links Linker) {
	if route == "enhancement" {
		if r.DeletedAt == 0 {
			md.VideoURL = links.Link(r.VideoKey)
		}
		d, f := r.Duration, r.FPS
		md.Duration, md.FPS = &d, &f
		md.Resolution, md.ToolVersion = r.Resolution, r.ToolVersion
		return
	}
	if r.DeletedAt != 0 {
		return
	}
	md.URL = links.Link(r.VideoKey)
	if r.LastFrameKey != "" {
		md.LastFrameURL = links.Link(r.LastFrameKey)
	}
}

// Get reads a task for its owner key. Any other key, or an unknown id, is not found: the
// answer must not reveal that a task exists. An id that cannot be one of ours is not found
// before any query (see idgen.Plausible: PostgreSQL errors on NUL and invalid UTF-8).
func (s *Service) Get(ctx context.Context, c keys.Caller, id string) (store.Task, error) {
	if !idgen.Plausible(id) {
		return store.Task{}, taskNotFound()
	}
	t, err := s.Store.Task(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && t.KeyID != c.Key.ID) {
		return store.Task{}, taskNotFound()
	}
	return t, err
}

// taskNotFound is made only when needed: Get is the hottest path.
func taskNotFound() error {
	return apierr.New(apierr.KindNotFound, "No video task with this id exists for this API key.")
}

// BlobLinker mints links to stored results with a fixed lifetime.
type BlobLinker struct {
	Blobs blob.Store
	TTL   time.Duration
	// Base, when set, is the base URL of the links in place of the store's: the tenant's
	// own address (LinkerIn).
	Base string
}

// LinkerIn is l minting links under ctx's link base (blob.WithLinkBase): the address of the
// tenant a request is answered for. A Linker of another kind is returned as it is.
func LinkerIn(ctx context.Context, l Linker) Linker {
	if b, ok := l.(BlobLinker); ok {
		b.Base = blob.LinkBase(ctx)
		return b
	}
	return l
}

// Expiry is when a link minted now expires: the expires_at of a task view.
func (l BlobLinker) Expiry() time.Time {
	return time.Now().Add(l.TTL)
}

// Link returns a fresh signed link to key.
func (l BlobLinker) Link(key string) string {
	u, _ := blob.SignedURLAt(l.Blobs, l.Base, key, l.TTL)
	return u
}
