package store

import (
	"context"
	"time"
)

// Asset libraries. Groups and assets belong to exactly one; the libraries never mix.
const (
	LibraryVirtual   = "virtual"
	LibraryRealHuman = "real_human"
)

// Where an asset group came from.
const (
	GroupOriginTenant       = "tenant"       // created by the tenant (virtual only)
	GroupOriginCatalog      = "catalog"      // granted by the operator's catalog (virtual_groups)
	GroupOriginOperator     = "operator"     // granted with `mediagen admin asset-group grant`
	GroupOriginVerification = "verification" // made by a passed real-human verification
)

// Authorization status of an asset group.
const (
	GroupActive  = "Active"
	GroupRevoked = "Revoked"
)

// Asset statuses, as the API shows them.
const (
	AssetProcessing = "Processing"
	AssetActive     = "Active"
	AssetFailed     = "Failed"
)

// Verification session statuses.
const (
	VerifyPending  = "pending"
	VerifyPassed   = "passed"
	VerifyDeclined = "declined"
)

// Callback delivery states of a verification session ("" when there is no callback).
const (
	CallbackPending   = "pending"
	CallbackDelivered = "delivered"
	CallbackFailed    = "failed"
)

// AssetGroup is a group of assets of one tenant in one library.
type AssetGroup struct {
	ID          string
	TenantID    string
	Library     string // LibraryVirtual or LibraryRealHuman
	Name        string
	Description string
	Origin      string // GroupOrigin*
	Status      string // GroupActive or GroupRevoked
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// AssetCount is filled by reads: the assets the group holds, in any status.
	AssetCount int
	// Upstream is the ark_assets account the group is mirrored in and UpstreamID the vendor's
	// group there ("" for the service's own library, or before its first asset registered).
	Upstream, UpstreamID string
}

// AssetGroupQuery selects groups; empty fields do not filter. Results are newest first.
type AssetGroupQuery struct {
	TenantID string
	Library  string
	Origin   string
	Offset   int
	Limit    int // 0: no limit
}

// Asset is one media file of the library: where it came from, what the service measured, and
// the key of the service's own copy.
type Asset struct {
	ID            string
	TenantID      string
	KeyID         string // the key that created it: its ingestion counts against that key's limit
	GroupID       string
	Library       string
	Name          string
	Type          string // Image, Video, Audio: what the client declared, confirmed by sniffing
	SourceURL     string
	Status        string // AssetProcessing, AssetActive, AssetFailed
	FailureCode   string
	FailureReason string
	BlobKey       string // the stored copy (Active only)
	ContentType   string
	Bytes         int64
	Duration      float64 // seconds, measured from the stored copy (videos)
	Width, Height int
	Attempts      int // processing attempts started (a Processing asset's are its job's)
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Upstream is the ark_assets account the asset is registered in ("": the service's own
	// library only), frozen at creation; UpstreamID and UpstreamStatus are the vendor's id and
	// status once registered. Such an asset stays Processing until the vendor says Active.
	Upstream, UpstreamID, UpstreamStatus string
}

// AssetUpstream is the vendor's side of an asset: its id and status, and, when the vendor
// settled it, the asset's end (Status Active or Failed; "" keeps it Processing).
type AssetUpstream struct {
	ID                         string
	UpstreamID, UpstreamStatus string
	Status                     string
	FailureCode, FailureReason string
	At                         time.Time
}

// AssetQuery selects assets; empty fields do not filter. Results are newest first.
type AssetQuery struct {
	TenantID string
	Library  string
	GroupID  string
	Type     string
	Status   string
	Offset   int
	Limit    int // 0: no limit
}

// AssetOutcome is the end of processing: Active with the stored copy and its measurements, or
// Failed with a code and a client-safe reason.
type AssetOutcome struct {
	ID            string
	Status        string // AssetActive or AssetFailed
	FailureCode   string
	FailureReason string
	BlobKey       string
	ContentType   string
	Bytes         int64
	Duration      float64
	Width, Height int
	Attempts      int // processing attempts it took
	At            time.Time
}

// VerifySession is one real-human verification: the token (stored as its SHA-256 hash), what
// the end user did, and the callback owed to the tenant.
type VerifySession struct {
	ID          string
	TokenHash   []byte
	TenantID    string
	KeyID       string
	CallbackURL string
	Status      string // VerifyPending, VerifyPassed, VerifyDeclined
	GroupID     string // the real-human group made on a pass
	CreatedAt   time.Time
	ExpiresAt   time.Time
	StartedAt   time.Time // when the liveness check was started (zero before)
	FinishedAt  time.Time
	RedeemedAt  time.Time // when validate-result/get returned the GroupId (zero before)

	CallbackBody     []byte // the JSON payload, fixed when the user finished
	CallbackState    string // "", CallbackPending, CallbackDelivered, CallbackFailed
	CallbackAttempts int
	// Upstream is the ark_assets account that runs the check ("": the service's own page)
	// and UpstreamToken the vendor's token of it (BytedToken).
	Upstream, UpstreamToken string
}

// AssetStore is the read side of the asset library. Its background work (ingestion,
// callbacks) is leased as jobs of the job engine (JobStore), not here.
type AssetStore interface {
	AssetGroup(ctx context.Context, id string) (AssetGroup, error)
	// AssetGroups returns one page of the matching groups and the total number matching.
	AssetGroups(ctx context.Context, q AssetGroupQuery) ([]AssetGroup, int, error)
	Asset(ctx context.Context, id string) (Asset, error)
	// Assets returns one page of the matching assets and the total number matching.
	Assets(ctx context.Context, q AssetQuery) ([]Asset, int, error)

	VerifySessionByToken(ctx context.Context, tokenHash []byte) (VerifySession, error)
	VerifySession(ctx context.Context, id string) (VerifySession, error)
	// AssetGroupByUpstream finds the group bound to a vendor group (ErrNotFound: none).
	AssetGroupByUpstream(ctx context.Context, upstream, upstreamID string) (AssetGroup, error)
}

// AssetTx is the write side of the asset library, inside Store.Transact.
type AssetTx interface {
	AssetGroupForUpdate(ctx context.Context, id string) (AssetGroup, error)
	// CreateAssetGroup inserts a group; an existing id fails with ErrConflict.
	CreateAssetGroup(ctx context.Context, g AssetGroup) error
	// UpdateAssetGroup writes Name, Description, Status and UpdatedAt of the group g.ID.
	UpdateAssetGroup(ctx context.Context, g AssetGroup) error
	// DeleteAssetGroup removes an empty group; a group that holds assets fails with
	// ErrConflict.
	DeleteAssetGroup(ctx context.Context, id string) error
	// CreateAsset inserts an asset into an existing group. A Processing asset counts as one
	// ingestion in flight of its key and tenant until FinishAsset or DeleteAsset ends it.
	CreateAsset(ctx context.Context, a Asset) error
	RenameAsset(ctx context.Context, id, name string, at time.Time) error
	// DeleteAsset removes an asset and returns the key of its stored copy ("" when none). A
	// Processing asset's ingestion stops counting in flight.
	DeleteAsset(ctx context.Context, id string) (blobKey string, err error)

	CreateVerifySession(ctx context.Context, v VerifySession) error
	// StartVerifySession records the start of the liveness check of a pending session
	// (ErrConflict when it is no longer pending).
	StartVerifySession(ctx context.Context, id string, at time.Time) error
	// FinishVerifySession moves a pending session to passed or declined with its group and
	// its callback payload (callback due at once when the session has a callback URL);
	// ErrConflict when it is no longer pending.
	FinishVerifySession(ctx context.Context, id, status, groupID string, callbackBody []byte, at time.Time) error
	// RedeemVerifySession marks the result as handed out; ErrConflict when it already was.
	RedeemVerifySession(ctx context.Context, id string, at time.Time) error

	// FinishAsset ends processing of an asset that is still Processing; otherwise (deleted,
	// or finished by a run that took over) it fails with ErrLeaseLost and changes nothing.
	// The caller's job lease, checked in the same transaction, fences runs. The asset's
	// ingestion stops counting in flight — unless o.Status is AssetProcessing: the copy is
	// stored and the asset waits for its upstream library, still in flight until
	// SetAssetUpstream ends it.
	FinishAsset(ctx context.Context, o AssetOutcome) error
	// FinishCallback records a delivery attempt of a pending callback: the new state and the
	// attempts made. ErrLeaseLost when the callback is no longer pending.
	FinishCallback(ctx context.Context, id, state string, attempts int) error

	// SetAssetGroupUpstream replaces a group's vendor binding (oldUpstream, oldID) with
	// (upstream, upstreamID), compare-and-swap; ErrConflict when it changed meanwhile or the
	// vendor group is bound to another group already.
	SetAssetGroupUpstream(ctx context.Context, id, oldUpstream, oldID, upstream, upstreamID string) error
	// SetAssetUpstream records the vendor's id and status of a Processing asset and, with a
	// Status, ends it (and it stops counting in flight); ErrLeaseLost when it is gone or no
	// longer Processing.
	SetAssetUpstream(ctx context.Context, u AssetUpstream) error
	// SetVerifyUpstream records the vendor's token of a session the vendor runs.
	SetVerifyUpstream(ctx context.Context, id, upstream, token string) error
}
