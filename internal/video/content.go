package video

import (
	"context"
	"errors"
	"fmt"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
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

// resolveContent checks asset:// references against the library and measures production input
// videos. It returns the measured input-video seconds (production only), in content order.
func (s *Service) resolveContent(ctx context.Context, c Caller, req *contract.VideoRequest, stored *Stored) ([]float64, error) {
	var inputs []float64
	production := req.Route == contract.RouteProduction
	for i, it := range req.Content {
		param := itemParam(i, it)
		var seconds float64
		if it.IsAsset {
			a, err := s.resolveAsset(ctx, c, it, param)
			if err != nil {
				return nil, err
			}
			if stored.Assets == nil {
				stored.Assets = map[int]Asset{}
			}
			stored.Assets[i] = a
			seconds = a.Duration
		} else if production && it.Role == contract.RoleReferenceVideo {
			if s.Prober == nil {
				return nil, &apierr.Error{Kind: apierr.KindUnavailable, Message: "Input videos cannot be measured right now. Retry later."}
			}
			d, err := s.Prober.ProbeSeconds(ctx, it.URL)
			if err != nil {
				return nil, &apierr.Error{Kind: apierr.KindInvalid, Param: param, Err: err,
					Message: "The input video could not be measured: " + ProbeMessage(err) + " Use a direct, stable, publicly reachable HTTPS MP4 or MOV URL that allows byte-range reads."}
			}
			seconds = d
		}
		if production && it.Role == contract.RoleReferenceVideo {
			if req.Production.Mode == contract.ModeEdit && (seconds < contract.EditReferenceMinSeconds || seconds > contract.EditReferenceMaxSeconds) {
				return nil, apierr.Invalid(param, fmt.Sprintf("Edit mode needs a reference video of %d to %d seconds; this one measures %.3f seconds.",
					contract.EditReferenceMinSeconds, contract.EditReferenceMaxSeconds, seconds))
			}
			inputs = append(inputs, seconds)
		}
	}
	return inputs, nil
}

func (s *Service) resolveAsset(ctx context.Context, c Caller, it contract.ContentItem, param string) (Asset, error) {
	if s.Assets == nil {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q was not found in this account's asset library.", it.AssetID))
	}
	a, err := s.Assets.Resolve(ctx, c.Tenant.ID, it.AssetID)
	if errors.Is(err, ErrAssetNotFound) || errors.Is(err, store.ErrNotFound) {
		return Asset{}, apierr.Invalid(param, fmt.Sprintf("Asset %q was not found in this account's asset library.", it.AssetID))
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
