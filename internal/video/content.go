package video

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
)

// ErrAssetNotFound is what an Assets implementation returns for an id that does not exist
// or belongs to another tenant; both answer the same, so ids cannot be probed.
var ErrAssetNotFound = errors.New("asset not found")

// Asset types and the status a usable asset has.
const (
	AssetImage  = "Image"
	AssetVideo  = "Video"
	AssetAudio  = "Audio"
	AssetActive = "Active"
)

// measureTimeout bounds the measuring of a request's input videos, all of them together:
// each costs a few range requests, and a client waits for its 202 meanwhile.
const measureTimeout = 20 * time.Second

func itemParam(i int, it contract.ContentItem) string {
	return fmt.Sprintf("metadata.content[%d].%s.url", i, it.Type)
}

func wantAssetType(r contract.ContentRole) string {
	switch r {
	case contract.RoleReferenceVideo:
		return AssetVideo
	case contract.RoleReferenceAudio:
		return AssetAudio
	}
	return AssetImage
}

// measured is what resolveContent learned about a request's media.
type measured struct {
	// inputs are the input-video seconds, in content order (production bills them).
	inputs []float64
	// source is the measured length of an enhancement source.
	source float64
}

// resolveContent refuses at submission whatever can be decided before acceptance — a 400 on
// its param, never a task accepted and failed later: every URL passes the fetch policy's static check, asset:// references are looked
// up, and every input video — reference videos on both generation routes and the enhancement
// source — is measured, so a file that is not a video, a reference outside the edit-mode
// length, or an unreachable source is a 400 on its param with nothing written.
func (s *Service) resolveContent(ctx context.Context, c keys.Caller, req *contract.VideoRequest, stored *Stored, upload *Asset) (measured, error) {
	var m measured
	type job struct {
		param string
		url   string
		http  bool
	}
	var jobs []job
	var jobItem []int // content index of each job; -1 for the enhancement source
	seconds := make([]float64, len(req.Content))
	for i, it := range req.Content {
		param := itemParam(i, it)
		if it.IsAsset {
			var a Asset
			var err error
			if upload != nil && it.AssetID == upload.ID {
				// An input_reference this very request uploaded: stored and checked already.
				a = *upload
			} else {
				a, err = s.resolveAsset(ctx, c, it, param)
			}
			if err != nil {
				return m, err
			}
			if stored.Assets == nil {
				stored.Assets = map[int]Asset{}
			}
			stored.Assets[i] = a
			seconds[i] = a.Duration
			continue
		}
		if err := s.checkURL(param, it.URL, false); err != nil {
			return m, err
		}
		if it.Role == contract.RoleReferenceVideo {
			jobs = append(jobs, job{param: param, url: it.URL})
			jobItem = append(jobItem, i)
		}
	}
	if req.Route == contract.RouteEnhancement {
		// The contract allows a plain-http source for enhancement (HTTPS recommended).
		if err := s.checkURL("metadata.video_url", req.Enhancement.VideoURL, true); err != nil {
			return m, err
		}
		jobs = append(jobs, job{param: "metadata.video_url", url: req.Enhancement.VideoURL, http: true})
		jobItem = append(jobItem, -1)
	}
	if len(jobs) > 0 {
		if s.Prober == nil {
			return m, &apierr.Error{Kind: apierr.KindUnavailable, Message: "Input videos cannot be measured right now. Retry later."}
		}
		timeout := s.MeasureTimeout
		if timeout <= 0 {
			timeout = measureTimeout
		}
		mctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		got := make([]float64, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for j, jb := range jobs {
			wg.Go(func() { got[j], errs[j] = s.Prober.MeasureVideo(mctx, jb.url, jb.http) })
		}
		wg.Wait()
		// The first failure in request order is reported, whatever finished first.
		for j, err := range errs {
			if errors.Is(err, ErrProbesBusy) {
				// Every probe slot stayed busy: like the media budget's refusals, a short hint.
				return m, &apierr.Error{Kind: apierr.KindUnavailable, Err: err, RetryAfter: budget.RetryAfter,
					Message: fmt.Sprintf("Input videos cannot be measured right now. Retry after %d s (Retry-After).", budget.RetryAfter)}
			}
			if err != nil {
				what := "The input video"
				if jobItem[j] < 0 {
					what = "The source video"
				}
				return m, &apierr.Error{Kind: apierr.KindInvalid, Param: jobs[j].param, Err: err,
					Message: what + " could not be measured: " + ProbeMessage(err) + " Use a direct, stable, publicly reachable MP4 or MOV URL that allows byte-range reads."}
			}
			if jobItem[j] < 0 {
				m.source = got[j]
			} else {
				seconds[jobItem[j]] = got[j]
			}
		}
	}
	mode := contract.Mode("")
	switch req.Route {
	case contract.RouteNative:
		mode = req.Native.Mode
	case contract.RouteProduction:
		mode = req.Production.Mode
	}
	for i, it := range req.Content {
		if it.Role != contract.RoleReferenceVideo {
			continue
		}
		if mode == contract.ModeEdit && (seconds[i] < contract.EditReferenceMinSeconds || seconds[i] > contract.EditReferenceMaxSeconds) {
			return m, apierr.Invalid(itemParam(i, it), fmt.Sprintf("Edit mode needs a reference video of %d to %d seconds; this one measures %.3f seconds.",
				contract.EditReferenceMinSeconds, contract.EditReferenceMaxSeconds, seconds[i]))
		}
		m.inputs = append(m.inputs, seconds[i])
	}
	return m, nil
}

// checkURL applies the fetch policy's static rules: an address refusable without any network
// (a private or loopback literal, localhost, credentials, a forbidden scheme or port) is a 400
// on its param before anything is written.
func (s *Service) checkURL(param, raw string, allowHTTP bool) error {
	if s.Prober == nil {
		return nil
	}
	if err := s.Prober.Check(raw, allowHTTP); err != nil {
		return &apierr.Error{Kind: apierr.KindInvalid, Param: param, Err: err,
			Message: fmt.Sprintf("%s cannot be fetched: %s", param, ProbeMessage(err))}
	}
	return nil
}

func (s *Service) resolveAsset(ctx context.Context, c keys.Caller, it contract.ContentItem, param string) (Asset, error) {
	if s.Assets == nil {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q was not found in this account's asset library.", it.AssetID))
	}
	a, err := s.Assets.Resolve(ctx, c.Tenant.ID, it.AssetID)
	if errors.Is(err, ErrAssetNotFound) || errors.Is(err, store.ErrNotFound) {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q was not found in this account's asset library.", it.AssetID))
	}
	var refused *apierr.Error
	if errors.As(err, &refused) && refused.Param == "" {
		// The library words some refusals itself (403 asset_group_not_authorized for a group
		// the operator revoked) but cannot know where the reference sits in the request. Like
		// every other refusal of an asset, it names the content item. A copy: the library's
		// error is not ours to change.
		named := *refused
		named.Param = param
		return Asset{}, &named
	}
	if err != nil {
		return Asset{}, err
	}
	if a.Status != AssetActive {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q is not Active (its status is %s); only Active assets can be used.", it.AssetID, a.Status))
	}
	if want := wantAssetType(it.Role); a.Type != want {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q is of type %s, but role %s needs a %s asset.", it.AssetID, a.Type, it.Role, want))
	}
	return a, nil
}
