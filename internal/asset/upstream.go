package asset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/arkassets"
	"mediagen/internal/store"
)

// Upstream asset libraries (kind ark_assets, docs/assets.md "ModelArk's asset library"). A
// tenant whose catalog entry names an asset_library has its virtual assets registered there
// too: the asset is fetched, checked and stored as always (asset.ingest), then stays
// Processing while the job asset.upstream makes the group's vendor group (once), hands the
// vendor a signed link to the stored copy (CreateAsset) and mirrors the vendor's status until
// Active or Failed. Only then is the asset Active, and a Seedance task on an ark account of the
// same ModelArk account receives it as asset://<vendor id>.

// UpstreamKind is the job kind that registers an asset in its upstream library.
const UpstreamKind = "asset.upstream"

// Failure codes of an asset the upstream library did not take.
const (
	FailUpstreamRefused = "upstream_refused"      // the library's review refused the media
	FailUpstreamTimeout = "upstream_timeout"      // the library did not settle the asset in time
	FailUpstreamLimits  = "upstream_image_limits" // the image is outside the library's limits
)

// CodeImageOutsideLimits is the 400 of an image the tenant's upstream library cannot take.
const CodeImageOutsideLimits = "image_outside_library_limits"

// libraryCheckTimeout bounds the read of an image's header at submission.
const libraryCheckTimeout = 10 * time.Second

// Defaults of the upstream settings of Config.
const (
	DefaultUpstreamPoll     = 5 * time.Second
	DefaultUpstreamDeadline = 30 * time.Minute
)

// Library is an upstream asset library: the client of an ark_assets account
// (*arkassets.Client).
type Library interface {
	CreateAssetGroup(ctx context.Context, name, description string) (string, error)
	FindAssetGroup(ctx context.Context, name string) (string, bool, error)
	CreateAsset(ctx context.Context, groupID, src, assetType, name string) (string, error)
	FindAsset(ctx context.Context, groupID, name string) (arkassets.Asset, bool, error)
	GetAsset(ctx context.Context, id string) (arkassets.Asset, error)
	CreateVisualValidateSession(ctx context.Context, callbackURL string) (arkassets.Session, error)
	GetVisualValidateResult(ctx context.Context, token string) (string, error)
}

// UpstreamJob is the job that registers an asset upstream, enqueued when its copy is stored.
func UpstreamJob(a store.Asset, at time.Time) store.Job {
	return store.Job{ID: jobs.ID(UpstreamKind, a.ID), Kind: UpstreamKind, Ref: a.ID, TenantID: a.TenantID, KeyID: a.KeyID,
		RunAt: at, CreatedAt: at}
}

func (s *Service) library(name string) (Library, bool) {
	if s.cfg.Libraries == nil || name == "" {
		return nil, false
	}
	return s.cfg.Libraries(name)
}

func (s *Service) upstreamPoll() time.Duration {
	if s.cfg.UpstreamPoll > 0 {
		return s.cfg.UpstreamPoll
	}
	return DefaultUpstreamPoll
}

func (s *Service) upstreamDeadline() time.Duration {
	if s.cfg.UpstreamDeadline > 0 {
		return s.cfg.UpstreamDeadline
	}
	return DefaultUpstreamDeadline
}

// outsideLimits names why an image of w×h pixels and n bytes is outside the upstream
// library's limits ("" when it is inside).
func outsideLimits(w, h int, n int64) string {
	switch {
	case w < catalog.ArkAssetsMinSide || h < catalog.ArkAssetsMinSide || w > catalog.ArkAssetsMaxSide || h > catalog.ArkAssetsMaxSide:
		return fmt.Sprintf("The image is %d×%d pixels; this library takes images whose sides are %d to %d pixels.",
			w, h, catalog.ArkAssetsMinSide, catalog.ArkAssetsMaxSide)
	case float64(w) < catalog.ArkAssetsMinAspect*float64(h) || float64(w) > catalog.ArkAssetsMaxAspect*float64(h):
		return fmt.Sprintf("The image is %d×%d pixels, a width/height ratio of %.2f; this library takes ratios of %.1f to %.1f.",
			w, h, float64(w)/float64(h), catalog.ArkAssetsMinAspect, catalog.ArkAssetsMaxAspect)
	case n > catalog.ArkAssetsMaxImageMiB<<20:
		return fmt.Sprintf("The image is %d bytes; this library takes images under %d MiB.", n, catalog.ArkAssetsMaxImageMiB)
	}
	return ""
}

// checkLibraryImage reads the start of an image source and refuses, at submission, one the
// upstream library cannot take: its sides, its aspect ratio, its declared size. A source that
// cannot be read now is left to processing, which fails it with the reason (and checks the
// stored copy's measurements again before registering it).
func (s *Service) checkLibraryImage(ctx context.Context, src string) *apierr.Error {
	// The request waits for this read: bounded well below the fetch client's total timeout,
	// which is sized for the largest accepted file.
	ctx, cancel := context.WithTimeout(ctx, libraryCheckTimeout)
	defer cancel()
	resp, err := s.cfg.Fetch.Get(ctx, src, safefetch.RequestOptions{MaxBytes: s.cfg.MaxImageBytes})
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	size, err := pixels.ReadSize(resp.Body)
	if err != nil {
		return nil
	}
	why := outsideLimits(size.Width, size.Height, max(resp.ContentLength, 0))
	if why == "" {
		return nil
	}
	return &apierr.Error{Kind: apierr.KindInvalid, Code: CodeImageOutsideLimits, Param: "URL", Message: why}
}

// registrar is the job handler of asset.upstream.
type registrar struct{ s *Service }

// Run takes the asset one step further with its library: the vendor group, the vendor asset,
// then one read of its status per run until it is settled. A lost create answer is found by
// name (our group id, our asset id), never made twice. Failures of the vendor's service wait
// and try again until the deadline, after which the asset fails.
func (h registrar) Run(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
	s := h.s
	a, err := s.cfg.Store.Asset(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}, nil
	case err != nil:
		return jobs.Outcome{}, err
	case a.Status != store.AssetProcessing || a.Upstream == "":
		return jobs.Outcome{Done: true}, nil
	}
	if s.now().Sub(a.CreatedAt) > s.upstreamDeadline() {
		return h.end(a, store.AssetFailed, FailUpstreamTimeout,
			"The asset library did not finish reviewing the media in time. Create the asset again; if it persists, contact the operator."), nil
	}
	lib, ok := s.library(a.Upstream)
	if !ok {
		s.log.WarnContext(ctx, "asset library account missing from the catalog", "asset", a.ID, "upstream", a.Upstream)
		return jobs.Outcome{RunIn: s.upstreamPoll()}, nil
	}
	out, err := h.step(ctx, lib, a)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil {
		return jobs.Outcome{}, ctx.Err()
	}
	var perr *provider.Error
	if errors.As(err, &perr) && errors.Is(err, provider.ErrPermanent) {
		s.log.InfoContext(ctx, "asset library refused the asset", "asset", a.ID, "code", perr.Code)
		return h.end(a, store.AssetFailed, FailUpstreamRefused,
			"The asset library refused the media. Use other media, or contact the operator."), nil
	}
	wait := max(s.upstreamPoll(), provider.RetryDelay(err))
	if errors.Is(err, provider.ErrAccount) {
		wait = max(wait, 12*s.upstreamPoll()) // the operator has to fix the account's keys
	}
	s.log.WarnContext(ctx, "asset library call failed; trying again", "asset", a.ID, "upstream", a.Upstream, "err", err)
	return jobs.Outcome{RunIn: wait}, nil
}

// step makes the next call the asset needs.
func (h registrar) step(ctx context.Context, lib Library, a store.Asset) (jobs.Outcome, error) {
	s := h.s
	if a.UpstreamID != "" {
		v, err := lib.GetAsset(ctx, a.UpstreamID)
		if err != nil {
			return jobs.Outcome{}, err
		}
		switch v.Status {
		case arkassets.StatusActive:
			return h.end(a, store.AssetActive, "", ""), nil
		case arkassets.StatusFailed:
			return h.end(a, store.AssetFailed, FailUpstreamRefused,
				"The asset library's review did not pass the media. Use other media."), nil
		}
		return jobs.Outcome{RunIn: s.upstreamPoll()}, nil
	}
	if a.Type == TypeImage {
		if why := outsideLimits(a.Width, a.Height, a.Bytes); why != "" {
			return h.end(a, store.AssetFailed, FailUpstreamLimits, why), nil
		}
	}
	group, err := h.group(ctx, lib, a)
	if err != nil {
		return jobs.Outcome{}, err
	}
	found, ok, err := lib.FindAsset(ctx, group, a.ID)
	if err != nil {
		return jobs.Outcome{}, err
	}
	id := found.ID
	if !ok {
		link, _ := s.cfg.Blobs.SignedURL(a.BlobKey, s.taskLinkTTL())
		if id, err = lib.CreateAsset(ctx, group, link, a.Type, a.ID); err != nil {
			return jobs.Outcome{}, err
		}
	}
	u := store.AssetUpstream{ID: a.ID, UpstreamID: id, UpstreamStatus: arkassets.StatusProcessing, At: s.now()}
	return jobs.Outcome{RunIn: s.upstreamPoll(), Apply: func(ctx context.Context, tx store.Tx) error {
		return ignoreGone(tx.SetAssetUpstream(ctx, u))
	}}, nil
}

// group is the vendor group of the asset's group: the one it is bound to, or (a virtual group)
// one made now — found first by name, in case an earlier run's create lost its answer.
func (h registrar) group(ctx context.Context, lib Library, a store.Asset) (string, error) {
	g, err := h.s.cfg.Store.AssetGroup(ctx, a.GroupID)
	if err != nil {
		return "", err
	}
	if g.Upstream == a.Upstream && g.UpstreamID != "" {
		return g.UpstreamID, nil
	}
	if g.Library != store.LibraryVirtual {
		// A real-human group is the vendor's, made by its verification; there is none to make.
		return "", &provider.Error{Kind: provider.ErrPermanent, Code: "no_vendor_group", Message: "real-human group without a vendor group"}
	}
	id, found, err := lib.FindAssetGroup(ctx, g.ID)
	if err != nil {
		return "", err
	}
	if !found {
		if id, err = lib.CreateAssetGroup(ctx, g.ID, ""); err != nil {
			return "", err
		}
	}
	err = h.s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		return tx.SetAssetGroupUpstream(ctx, g.ID, g.Upstream, g.UpstreamID, a.Upstream, id)
	})
	if errors.Is(err, store.ErrConflict) {
		// Another run bound it first: that binding is the group's.
		g, err = h.s.cfg.Store.AssetGroup(ctx, a.GroupID)
		if err == nil && g.Upstream == a.Upstream && g.UpstreamID != "" {
			return g.UpstreamID, nil
		}
		return "", fmt.Errorf("bind group %s: %w", a.GroupID, provider.ErrTransient)
	}
	return id, err
}

// end settles the asset: Active, or Failed with a code and a client-safe reason (its stored
// copy is then removed).
func (h registrar) end(a store.Asset, status, code, reason string) jobs.Outcome {
	s := h.s
	up := a.UpstreamStatus
	if status == store.AssetActive {
		up = arkassets.StatusActive
	}
	u := store.AssetUpstream{ID: a.ID, UpstreamID: a.UpstreamID, UpstreamStatus: up, Status: status, FailureCode: code,
		FailureReason: reason, At: s.now()}
	var gone bool
	var announced string
	return jobs.Outcome{Done: true,
		Apply: func(ctx context.Context, tx store.Tx) error {
			err := tx.SetAssetUpstream(ctx, u)
			if errors.Is(err, store.ErrLeaseLost) {
				gone = true
				return nil
			}
			if err == nil {
				announced, err = s.announceAsset(ctx, tx, assetEvent(a.TenantID, a.KeyID, a.ID, status, u.At))
			}
			return err
		},
		After: func() {
			if gone {
				return
			}
			s.wake(announced)
			if status == store.AssetFailed {
				s.deleteCopy(a.BlobKey)
			}
			if s.cfg.Processed != nil {
				s.cfg.Processed.WithLabelValues(a.Type, status, code).Inc()
			}
		}}
}

// GiveUp fails an asset whose registration runs kept dying.
func (h registrar) GiveUp(ctx context.Context, j jobs.Job, _ error) jobs.Outcome {
	a, err := h.s.cfg.Store.Asset(ctx, j.Ref)
	if err != nil || a.Status != store.AssetProcessing {
		return jobs.Outcome{Done: true}
	}
	return h.end(a, store.AssetFailed, FailInterrupted, "Processing was interrupted repeatedly. Create the asset again.")
}

func ignoreGone(err error) error {
	if errors.Is(err, store.ErrLeaseLost) {
		return nil
	}
	return err
}
