// Package video is the video task use case: accept a request on any of the three routes
// (native, enhancement, production), price it, and store it with its job and reservation in
// one transaction; read it back for its owner; and run it — the pipeline's steps, as the
// handler of the video.task job kind, settled once at the end. See docs/video.md and
// docs/runner.md.
package video

import (
	"context"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
)

// Prober checks and measures remote media at submission. Every URL a client sends passes
// Check before anything is written (the dial-time check of the fetch client stays the real
// guard), and every input video is measured: reservations and the edit-mode rule use what
// the service measured, never what the client declared.
type Prober interface {
	// Check applies the fetch policy's static rules to raw, without any I/O.
	Check(raw string, allowHTTP bool) error
	// MeasureVideo returns the duration of the MP4/MOV video at url; media that is not a
	// video is an error.
	MeasureVideo(ctx context.Context, url string, allowHTTP bool) (float64, error)
}

// Asset is what the video service needs to know about an asset:// reference.
type Asset struct {
	ID       string
	Type     string // Image, Video, Audio
	Status   string // Active, …
	Duration float64
	// AccessURL is a fresh temporary link the engine reads the asset through.
	AccessURL string
	// Path is the stored copy on local storage, when there is one: an engine on the same
	// machine (the sandbox) reads it instead of fetching AccessURL.
	Path string
	// Key is the stored copy's key in the service's object store, when it has no local
	// path (an S3 bucket shared by the cluster): a local engine on any replica reads it
	// with the store's credentials.
	Key string
	// Library and LibraryID: the ark_assets account the asset is registered in and its id
	// there; an engine of the same ModelArk account refers to it by that id (asset://).
	Library   string `json:",omitempty"`
	LibraryID string `json:",omitempty"`
}

// Assets resolves asset:// references of a tenant. Nil means no asset library: every
// reference is unknown.
type Assets interface {
	Resolve(ctx context.Context, tenantID, assetID string) (Asset, error)
}

// Store is what the video service needs of the database; the SQL store satisfies it. The
// transaction is the store's, so that a unit test's fake Tx embeds store.Tx and implements
// only the writes a create makes (CreateTask, EnqueueJob, InFlight, Post).
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	Task(ctx context.Context, id string) (store.Task, error)
	TaskByRequestID(ctx context.Context, keyID, clientRequestID string) (store.Task, error)
}

// Service accepts and reads video tasks.
type Service struct {
	Store  Store
	Prober Prober
	Assets Assets
	// Blobs holds the results; DELETE /v1/videos/{id} removes them (nil: nothing removed).
	Blobs blob.Store
	Now   func() time.Time
	// Scheduled reports newly accepted tasks to the job engine (may be nil).
	Scheduled func(taskID string)
	// Accounts finds the upstream account an alias is bound to, so that a request its engine
	// cannot serve is refused at submission (nil: every request is servable).
	Accounts func(name string) (catalog.UpstreamAccount, bool)
	// MeasureTimeout bounds the measuring of a request's input videos, all of them together,
	// including any wait for a probe slot (0: 20 s).
	MeasureTimeout time.Duration
	// FirstFrame writes a video's first frame as a JPEG (ffmpeg.Tools.FirstFrameJPG): it
	// makes the thumbnail of a task completed before thumbnails were made, on its first
	// variant=thumbnail (nil: such a task has none).
	FirstFrame func(ctx context.Context, video, out string) error
	// ThumbnailTimeout bounds making one such thumbnail (0: DefaultThumbnailTimeout).
	ThumbnailTimeout time.Duration
	// Media is the process-wide media budget: a late thumbnail takes one of its slots, within
	// the request's bounded wait, before anything starts (nil: no bound, for tests).
	Media *budget.Budget

	thumbs thumbnails
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
