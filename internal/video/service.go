// Package video is the video task use case: accept a request on any of the three routes
// (native, enhancement, production), price it, reserve, and store it durably in one
// transaction; read it back for its owner.
package video

import (
	"context"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// Prober measures a remote input video's duration in seconds. Production requests bill input
// videos from what the service measures, never from what the client says.
type Prober interface {
	ProbeSeconds(ctx context.Context, url string) (float64, error)
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
}

// Assets resolves asset:// references of a tenant. Nil means no asset library: every
// reference is unknown.
type Assets interface {
	Resolve(ctx context.Context, tenantID, assetID string) (Asset, error)
}

// Caller is the authenticated key and its tenant.
type Caller struct {
	Key    store.Key
	Tenant *catalog.Tenant
}

// Service accepts and reads video tasks.
type Service struct {
	Store  store.Store
	Prober Prober
	Assets Assets
	Now    func() time.Time
	// Scheduled reports newly accepted tasks to the runner (may be nil).
	Scheduled func(taskID string)
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
