package asset

import (
	"time"

	"mediagen/internal/store"
)

// Response bodies of the asset library. Field names are PascalCase like the contract's;
// absent optional fields are omitted, never null.

// GroupView is an asset group.
type GroupView struct {
	ID          string `json:"Id"`
	Name        string `json:"Name"`
	Description string `json:"Description,omitempty"`
	// Origin: Tenant (created with asset-groups/create), Operator (granted by the operator),
	// or Verification (made by a passed real-human verification).
	Origin string `json:"Origin"`
	// Status: Active (authorized: assets can be added and used) or Revoked (by the operator).
	Status     string `json:"Status"`
	AssetCount int    `json:"AssetCount"`
	CreatedAt  int64  `json:"CreatedAt"`
	UpdatedAt  int64  `json:"UpdatedAt"`
}

// AssetView is an asset. URL is a fresh temporary link to the service's stored copy, present
// only while the asset is Active.
type AssetView struct {
	ID            string  `json:"Id"`
	GroupID       string  `json:"GroupId"`
	AssetType     string  `json:"AssetType"`
	Name          string  `json:"Name"`
	Status        string  `json:"Status"`
	URL           string  `json:"URL,omitempty"`
	URLExpiresAt  int64   `json:"URLExpiresAt,omitzero"`
	Duration      float64 `json:"Duration,omitzero"`
	Width         int     `json:"Width,omitzero"`
	Height        int     `json:"Height,omitzero"`
	FailureCode   string  `json:"FailureCode,omitempty"`
	FailureReason string  `json:"FailureReason,omitempty"`
	CreatedAt     int64   `json:"CreatedAt"`
	UpdatedAt     int64   `json:"UpdatedAt"`
}

// GroupList is a page of groups.
type GroupList struct {
	Items      []GroupView `json:"Items"`
	PageNumber int         `json:"PageNumber"`
	PageSize   int         `json:"PageSize"`
	TotalCount int         `json:"TotalCount"`
}

// AssetList is a page of assets.
type AssetList struct {
	Items      []AssetView `json:"Items"`
	PageNumber int         `json:"PageNumber"`
	PageSize   int         `json:"PageSize"`
	TotalCount int         `json:"TotalCount"`
}

// Created answers assets/create: the new asset's Id, Processing until the copy is made.
type Created struct {
	ID     string `json:"Id"`
	Status string `json:"Status"`
}

// Deleted answers the delete operations.
type Deleted struct {
	ID      string `json:"Id"`
	Deleted bool   `json:"Deleted"`
}

// Session answers validate-session/create.
type Session struct {
	H5Link      string `json:"H5Link"`
	VerifyToken string `json:"VerifyToken"`
	ExpiresAt   int64  `json:"ExpiresAt"`
}

// Result answers validate-result/get after a passed verification.
type Result struct {
	GroupID string `json:"GroupId"`
}

// CallbackPayload is the JSON body POSTed to a session's CallbackURL when the end user
// finishes: Result is Passed or Declined; GroupId is present on Passed; Timestamp is the Unix
// time in seconds the user finished.
type CallbackPayload struct {
	VerifyToken string `json:"VerifyToken"`
	Result      string `json:"Result"`
	GroupID     string `json:"GroupId,omitempty"`
	Timestamp   int64  `json:"Timestamp"`
}

func origin(o string) string {
	switch o {
	case store.GroupOriginTenant:
		return "Tenant"
	case store.GroupOriginVerification:
		return "Verification"
	}
	return "Operator"
}

func groupView(g store.AssetGroup) GroupView {
	return GroupView{ID: g.ID, Name: g.Name, Description: g.Description, Origin: origin(g.Origin), Status: g.Status,
		AssetCount: g.AssetCount, CreatedAt: g.CreatedAt.Unix(), UpdatedAt: g.UpdatedAt.Unix()}
}

func (s *Service) assetView(a store.Asset) AssetView {
	v := AssetView{ID: a.ID, GroupID: a.GroupID, AssetType: a.Type, Name: a.Name, Status: a.Status,
		CreatedAt: a.CreatedAt.Unix(), UpdatedAt: a.UpdatedAt.Unix()}
	switch a.Status {
	case store.AssetActive:
		var exp time.Time
		v.URL, exp = s.cfg.Blobs.SignedURL(a.BlobKey, s.cfg.LinkTTL)
		v.URLExpiresAt = exp.Unix()
		v.Duration, v.Width, v.Height = a.Duration, a.Width, a.Height
	case store.AssetFailed:
		v.FailureCode, v.FailureReason = a.FailureCode, a.FailureReason
	}
	return v
}
