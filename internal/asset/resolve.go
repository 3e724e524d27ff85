package asset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// DefaultTaskLinkTTL is the lifetime of the access a video task gets to an asset: long
// enough for the task to finish.
const DefaultTaskLinkTTL = 24 * time.Hour

// ErrNotFound is Resolve's answer for an id that does not exist or is another tenant's: the
// two look the same, so ids cannot be probed.
var ErrNotFound = errors.New("asset not found")

// Resolved is what a video task needs of an asset:// reference.
type Resolved struct {
	ID       string
	Type     string // Image, Video, Audio
	Status   string // Processing, Active, Failed
	Duration float64
	// AccessURL is a fresh temporary link to the stored copy (Active only).
	AccessURL string
	// Path is the stored copy on local storage, when there is one.
	Path string
	// Key is the stored copy's key in the shared object store, when it has no local path.
	Key string
	// Library and LibraryID are the ark_assets account the asset is registered in and the
	// vendor's id there ("" for the service's own library only): an ark account of the same
	// ModelArk account sends asset://<LibraryID> instead of a link.
	Library, LibraryID string
}

// Resolve resolves an asset:// reference of a video request. The asset must exist and belong
// to the tenant (anything else is ErrNotFound) and be in a group that is still authorized.
// The video service reaches it through the wiring (cmd/mediagen), which adapts it to
// video.Assets: one use case does not import another. Assets of either library can be
// referenced. The video service checks Status and Type; an Active asset comes with fresh
// access to the stored copy: a signed link minted now, and its local path for an engine that
// runs on the same storage, or its key in the shared object store.
func (s *Service) Resolve(ctx context.Context, tenantID, assetID string) (Resolved, error) {
	// The contract already limits asset:// ids to this alphabet; the check keeps any other
	// caller from sending the store an id PostgreSQL would answer with an error.
	if !idgen.Plausible(assetID) {
		return Resolved{}, ErrNotFound
	}
	a, err := s.cfg.Store.Asset(ctx, assetID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && a.TenantID != tenantID) {
		return Resolved{}, ErrNotFound
	}
	if err != nil {
		return Resolved{}, err
	}
	g, err := s.cfg.Store.AssetGroup(ctx, a.GroupID)
	if err != nil {
		return Resolved{}, err
	}
	if g.Status != store.GroupActive {
		return Resolved{}, &apierr.Error{Kind: apierr.KindPermission, Code: CodeGroupNotAuthorized,
			Message: fmt.Sprintf("Asset %q is in an asset group that is no longer authorized for this account; it cannot be used. Contact the operator.", assetID)}
	}
	v := Resolved{ID: a.ID, Type: a.Type, Status: a.Status, Duration: a.Duration}
	if a.Status == store.AssetActive && a.UpstreamStatus == "Active" {
		v.Library, v.LibraryID = a.Upstream, a.UpstreamID
	}
	if a.Status == store.AssetActive {
		v.AccessURL, _ = s.cfg.Blobs.SignedURL(a.BlobKey, s.taskLinkTTL())
		var local bool
		if v.Path, local = s.cfg.Blobs.LocalPath(a.BlobKey); !local {
			v.Key = a.BlobKey
		}
	}
	return v, nil
}

func (s *Service) taskLinkTTL() time.Duration { return max(s.cfg.LinkTTL, DefaultTaskLinkTTL) }

// FileServer serves signed file links.
type FileServer interface {
	ServeFile(w http.ResponseWriter, r *http.Request) error
}

// Files serves GET /v1/files/{key...} from two stores that share the signing key: asset
// copies (keys under KeyPrefix) from Assets, everything else (task results) from Results.
// Asset copies live in their own root so the results' retention sweeper never touches them.
type Files struct {
	Assets, Results FileServer
}

// ServeFile implements the file route.
func (f Files) ServeFile(w http.ResponseWriter, r *http.Request) error {
	key := r.PathValue("key")
	if key == "" {
		key = strings.TrimPrefix(r.URL.Path, blob.FilesPath)
	}
	if strings.HasPrefix(key, KeyPrefix) {
		return f.Assets.ServeFile(w, r)
	}
	return f.Results.ServeFile(w, r)
}
