package asset

import (
	"context"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/store"
)

func origin(o string) string {
	switch o {
	case store.GroupOriginTenant:
		return "Tenant"
	case store.GroupOriginVerification:
		return "Verification"
	}
	return "Operator"
}

func groupView(g store.AssetGroup) contract.AssetGroup {
	return contract.AssetGroup{ID: g.ID, Name: g.Name, Description: g.Description, Origin: origin(g.Origin), Status: g.Status,
		AssetCount: g.AssetCount, CreatedAt: g.CreatedAt.Unix(), UpdatedAt: g.UpdatedAt.Unix()}
}

// assetView is the asset as its tenant sees it: its link is on the tenant's address when ctx
// names one (blob.WithLinkBase).
func (s *Service) assetView(ctx context.Context, a store.Asset) contract.Asset {
	v := contract.Asset{ID: a.ID, GroupID: a.GroupID, AssetType: a.Type, Name: a.Name, Status: a.Status,
		CreatedAt: a.CreatedAt.Unix(), UpdatedAt: a.UpdatedAt.Unix()}
	switch a.Status {
	case store.AssetActive:
		var exp time.Time
		v.URL, exp = blob.SignedURLIn(ctx, s.cfg.Blobs, a.BlobKey, s.cfg.LinkTTL)
		v.URLExpiresAt = exp.Unix()
		v.Duration, v.Width, v.Height = a.Duration, a.Width, a.Height
	case store.AssetFailed:
		v.FailureCode, v.FailureReason = a.FailureCode, a.FailureReason
	}
	return v
}
