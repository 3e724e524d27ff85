package main

import (
	"context"
	"errors"

	"mediagen/internal/asset"
	"mediagen/internal/video"
)

// videoAssets lets the video service resolve asset:// references in the asset library. The
// use cases do not import each other (docs/architecture.md): the wiring joins them here.
type videoAssets struct{ lib *asset.Service }

var _ video.Assets = videoAssets{}

// Resolve implements video.Assets.
func (a videoAssets) Resolve(ctx context.Context, tenantID, assetID string) (video.Asset, error) {
	r, err := a.lib.Resolve(ctx, tenantID, assetID)
	if errors.Is(err, asset.ErrNotFound) {
		return video.Asset{}, video.ErrAssetNotFound
	}
	if err != nil {
		return video.Asset{}, err
	}
	return video.Asset{ID: r.ID, Type: r.Type, Status: r.Status, Duration: r.Duration,
		AccessURL: r.AccessURL, Path: r.Path, Key: r.Key, Library: r.Library, LibraryID: r.LibraryID}, nil
}
