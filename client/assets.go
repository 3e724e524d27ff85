package client

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Asset types and states.
const (
	AssetImage = "Image"
	AssetVideo = "Video"
	AssetAudio = "Audio"

	AssetProcessing = "Processing"
	AssetActive     = "Active"
	AssetFailed     = "Failed"
)

// AssetGroup is a group record of either library.
type AssetGroup struct {
	ID          string `json:"Id"`
	Name        string `json:"Name"`
	Description string `json:"Description,omitempty"`
	Origin      string `json:"Origin"` // Tenant, Operator, Verification
	Status      string `json:"Status"` // Active, Revoked
	AssetCount  int    `json:"AssetCount"`
	CreatedAt   int64  `json:"CreatedAt"`
	UpdatedAt   int64  `json:"UpdatedAt"`
}

// Asset is an asset record. URL is a temporary link to the service's copy, present while
// Active; reference the asset in video requests as "asset://" + ID.
type Asset struct {
	ID            string  `json:"Id"`
	GroupID       string  `json:"GroupId,omitempty"`
	AssetType     string  `json:"AssetType,omitempty"`
	Name          string  `json:"Name,omitempty"`
	Status        string  `json:"Status"`
	URL           string  `json:"URL,omitempty"`
	URLExpiresAt  int64   `json:"URLExpiresAt,omitempty"`
	Duration      float64 `json:"Duration,omitempty"`
	Width         int     `json:"Width,omitempty"`
	Height        int     `json:"Height,omitempty"`
	FailureCode   string  `json:"FailureCode,omitempty"`
	FailureReason string  `json:"FailureReason,omitempty"`
	CreatedAt     int64   `json:"CreatedAt,omitempty"`
	UpdatedAt     int64   `json:"UpdatedAt,omitempty"`
}

// URI is the asset:// reference of the asset for metadata.content.
func (a *Asset) URI() string { return "asset://" + a.ID }

// Page selects a page of a list (zero values: the service's defaults, page 1 of 20).
type Page struct {
	PageNumber int `json:"PageNumber,omitempty"`
	PageSize   int `json:"PageSize,omitempty"`
}

// AssetGroupList is a page of groups, newest first.
type AssetGroupList struct {
	Items      []AssetGroup `json:"Items"`
	PageNumber int          `json:"PageNumber"`
	PageSize   int          `json:"PageSize"`
	TotalCount int          `json:"TotalCount"`
}

// AssetList is a page of assets, newest first.
type AssetList struct {
	Items      []Asset `json:"Items"`
	PageNumber int     `json:"PageNumber"`
	PageSize   int     `json:"PageSize"`
	TotalCount int     `json:"TotalCount"`
}

// AssetFilter narrows assets/list; empty fields do not filter.
type AssetFilter struct {
	GroupID    string `json:"GroupId,omitempty"`
	AssetType  string `json:"AssetType,omitempty"`
	Status     string `json:"Status,omitempty"`
	PageNumber int    `json:"PageNumber,omitempty"`
	PageSize   int    `json:"PageSize,omitempty"`
}

// NewAsset is the body of assets/create: media registered by an https URL the service copies.
type NewAsset struct {
	GroupID   string `json:"GroupId"`
	URL       string `json:"URL"`
	AssetType string `json:"AssetType"` // Image, Video or Audio
	Name      string `json:"Name,omitempty"`
}

// GroupUpdate is the body of asset-groups/update; nil fields are left alone, an empty
// Description clears it.
type GroupUpdate struct {
	ID          string  `json:"Id"`
	Name        *string `json:"Name,omitempty"`
	Description *string `json:"Description,omitempty"`
}

// Deleted is the answer of a delete.
type Deleted struct {
	ID      string `json:"Id"`
	Deleted bool   `json:"Deleted"`
}

// Library is the operations both libraries share, on their own paths. Ids of one library are
// unknown (404) to the other.
type Library struct {
	c      *Client
	prefix string
}

// VirtualLibrary is the virtual asset library.
type VirtualLibrary struct{ Library }

// RealHumanLibrary is the real-human asset library, whose groups come from real-person
// verification.
type RealHumanLibrary struct{ Library }

// Virtual returns the virtual library (/v1/vidgen/virtual/…).
func (c *Client) Virtual() *VirtualLibrary {
	return &VirtualLibrary{Library{c: c, prefix: "/v1/vidgen/virtual/"}}
}

// RealHuman returns the real-human library (/v1/vidgen/real-human/…).
func (c *Client) RealHuman() *RealHumanLibrary {
	return &RealHumanLibrary{Library{c: c, prefix: "/v1/vidgen/real-human/"}}
}

type idBody struct {
	ID string `json:"Id"`
}

// post sends one library call. Calls without an idempotency key are unreplayable: a dropped
// answer to a create may still have created something.
func (l *Library) post(ctx context.Context, op string, in, out any, s safety) error {
	if in == nil {
		in = struct{}{}
	}
	return l.c.do(ctx, http.MethodPost, l.prefix+op, in, out, s)
}

// postAs sends one library call and decodes its answer; nil on error.
func postAs[T any](ctx context.Context, l *Library, op string, in any, s safety) (*T, error) {
	var out T
	if err := l.post(ctx, op, in, &out, s); err != nil {
		return nil, err
	}
	return &out, nil
}

// CreateGroup makes a virtual group, authorized at once.
func (v *VirtualLibrary) CreateGroup(ctx context.Context, name, description string) (*AssetGroup, error) {
	in := struct {
		Name        string `json:"Name"`
		Description string `json:"Description,omitempty"`
	}{name, description}
	return postAs[AssetGroup](ctx, &v.Library, "asset-groups/create", in, unreplayable)
}

// ListGroups lists the groups of the library.
func (l *Library) ListGroups(ctx context.Context, p Page) (*AssetGroupList, error) {
	return postAs[AssetGroupList](ctx, l, "asset-groups/list", p, replayable)
}

// GetGroup reads a group.
func (l *Library) GetGroup(ctx context.Context, id string) (*AssetGroup, error) {
	return postAs[AssetGroup](ctx, l, "asset-groups/get", idBody{id}, replayable)
}

// UpdateGroup renames a group or changes its description.
func (l *Library) UpdateGroup(ctx context.Context, u GroupUpdate) (*AssetGroup, error) {
	return postAs[AssetGroup](ctx, l, "asset-groups/update", u, replayable)
}

// DeleteGroup deletes an empty group.
func (l *Library) DeleteGroup(ctx context.Context, id string) (*Deleted, error) {
	return postAs[Deleted](ctx, l, "asset-groups/delete", idBody{id}, unreplayable)
}

// CreateAsset registers media by URL. The answer is the new asset, Processing; use WaitAsset
// (or GetAsset) until it is Active.
func (l *Library) CreateAsset(ctx context.Context, a NewAsset) (*Asset, error) {
	return postAs[Asset](ctx, l, "assets/create", a, unreplayable)
}

// ListAssets lists assets, optionally filtered.
func (l *Library) ListAssets(ctx context.Context, f AssetFilter) (*AssetList, error) {
	return postAs[AssetList](ctx, l, "assets/list", f, replayable)
}

// GetAsset reads an asset (with a fresh temporary URL when Active).
func (l *Library) GetAsset(ctx context.Context, id string) (*Asset, error) {
	return postAs[Asset](ctx, l, "assets/get", idBody{id}, replayable)
}

// UpdateAsset renames an asset. Assets never move between groups.
func (l *Library) UpdateAsset(ctx context.Context, id, name string) (*Asset, error) {
	in := struct {
		ID   string `json:"Id"`
		Name string `json:"Name"`
	}{id, name}
	return postAs[Asset](ctx, l, "assets/update", in, replayable)
}

// DeleteAsset deletes an asset and the service's copy.
func (l *Library) DeleteAsset(ctx context.Context, id string) (*Deleted, error) {
	return postAs[Deleted](ctx, l, "assets/delete", idBody{id}, unreplayable)
}

// ErrAssetFailed is wrapped by WaitAsset's error when processing ended Failed.
var ErrAssetFailed = errors.New("mediagen: asset processing failed")

// WaitAsset polls assets/get every interval (0: the client's PollInterval) until the asset is
// no longer Processing. A Failed asset is returned with an error wrapping ErrAssetFailed.
func (l *Library) WaitAsset(ctx context.Context, id string, interval time.Duration) (*Asset, error) {
	if interval <= 0 {
		interval = l.c.o.PollInterval
	}
	for {
		a, err := l.GetAsset(ctx, id)
		if err != nil {
			return nil, err
		}
		switch a.Status {
		case AssetActive:
			return a, nil
		case AssetFailed:
			return a, &assetFailed{a}
		}
		if err := sleep(ctx, interval); err != nil {
			return nil, err
		}
	}
}

type assetFailed struct{ a *Asset }

func (e *assetFailed) Error() string {
	return "mediagen: asset " + e.a.ID + " failed: " + e.a.FailureCode + ": " + e.a.FailureReason
}

func (e *assetFailed) Unwrap() error { return ErrAssetFailed }

// VerifySession is the answer of validate-session/create: send the end user to H5Link, then
// exchange VerifyToken for the group with ValidateResult.
type VerifySession struct {
	H5Link      string `json:"H5Link"`
	VerifyToken string `json:"VerifyToken"`
	ExpiresAt   int64  `json:"ExpiresAt,omitempty"`
}

// CreateValidateSession starts a real-person verification. callbackURL (https) is optional.
func (r *RealHumanLibrary) CreateValidateSession(ctx context.Context, callbackURL string) (*VerifySession, error) {
	in := struct {
		CallbackURL string `json:"CallbackURL,omitempty"`
	}{callbackURL}
	return postAs[VerifySession](ctx, &r.Library, "validate-session/create", in, unreplayable)
}

// ValidateResult returns the GroupId of a passed verification. The service returns it once;
// until the user finishes it answers 400 verification_pending.
func (r *RealHumanLibrary) ValidateResult(ctx context.Context, verifyToken string) (string, error) {
	in := struct {
		VerifyToken string `json:"VerifyToken"`
	}{verifyToken}
	var out struct {
		GroupID string `json:"GroupId"`
	}
	if err := r.post(ctx, "validate-result/get", in, &out, unreplayable); err != nil {
		return "", err
	}
	return out.GroupID, nil
}
