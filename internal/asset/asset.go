// Package asset is the asset library use case: virtual and real-human asset groups, assets
// registered by URL and copied into the service's own storage in the background, real-human
// verification sessions with their end-user page state and callbacks, and the resolution of
// asset:// references for video requests.
//
// The background work is two job kinds on the job engine (Kinds): asset.ingest fetches the URL
// through safefetch, sniffs the real media type, stores and measures a copy and sets Active or
// Failed; verify.callback delivers a finished verification's callback. See docs/assets.md.
package asset

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/media/probe"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// Asset types, as the API names them.
const (
	TypeImage = "Image"
	TypeVideo = "Video"
	TypeAudio = "Audio"
)

// Error codes of asset operations (the code of the error envelope). docs/assets.md lists them
// with their HTTP statuses.
const (
	CodeGroupNotFound        = "asset_group_not_found"      // 404
	CodeAssetNotFound        = "asset_not_found"            // 404
	CodeVerifyTokenNotFound  = "verify_token_not_found"     // 404
	CodeGroupNotAuthorized   = "asset_group_not_authorized" // 403
	CodeGroupReadOnly        = "asset_group_read_only"      // 403
	CodeGroupNotEmpty        = "asset_group_not_empty"      // 400
	CodeMoveNotSupported     = "asset_move_not_supported"   // 400
	CodeInvalidSourceURL     = "invalid_source_url"         // 400
	CodeInvalidCallbackURL   = "invalid_callback_url"       // 400
	CodeVerificationPending  = "verification_pending"       // 400
	CodeVerificationDeclined = "verification_declined"      // 400
	CodeVerifyTokenExpired   = "verify_token_expired"       // 400
	CodeVerifyTokenUsed      = "verify_token_used"          // 400
)

// Failure codes of a Failed asset (its FailureCode).
const (
	FailSourceUnreachable = "source_unreachable"     // the URL could not be fetched (network, timeout, HTTP status)
	FailSourceForbidden   = "source_forbidden"       // the URL leads to a destination or redirect that is not allowed
	FailSourceTooLarge    = "source_too_large"       // the media is over the size cap
	FailUnsupportedMedia  = "unsupported_media"      // not an image, video or audio format the library takes
	FailTypeMismatch      = "asset_type_mismatch"    // the media is not of the declared AssetType
	FailUnreadable        = "media_unreadable"       // the media could not be read or measured
	FailTooManyPixels     = "media_too_many_pixels"  // an image or a video frame over its pixel budget (internal/media/pixels)
	FailInterrupted       = "processing_interrupted" // processing was interrupted too many times
	FailProcessing        = "processing_failed"      // the service could not store the copy
)

// Defaults of Config.
const (
	DefaultVerifyTTL        = 15 * time.Minute
	DefaultLinkTTL          = time.Hour
	DefaultMaxBytes         = 1 << 30
	DefaultMaxImageBytes    = 32 << 20
	DefaultLease            = 15 * time.Minute
	DefaultMaxAttempts      = 3
	DefaultRetryBackoff     = 5 * time.Second
	DefaultConcurrency      = 2
	DefaultPollInterval     = 10 * time.Second
	DefaultMinCheck         = 2 * time.Second
	DefaultCallbackAttempts = 5
	DefaultCallbackTimeout  = 10 * time.Second
)

// DefaultCallbackBackoff is the wait after each failed callback attempt.
var DefaultCallbackBackoff = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// Store is what the asset library needs of the database; the SQL store satisfies it.
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	AssetGroup(ctx context.Context, id string) (store.AssetGroup, error)
	AssetGroups(ctx context.Context, q store.AssetGroupQuery) ([]store.AssetGroup, int, error)
	Asset(ctx context.Context, id string) (store.Asset, error)
	Assets(ctx context.Context, q store.AssetQuery) ([]store.Asset, int, error)
	VerifySession(ctx context.Context, id string) (store.VerifySession, error)
	VerifySessionByToken(ctx context.Context, tokenHash []byte) (store.VerifySession, error)
}

// Config configures a Service. Store, Blobs and Fetch are required.
type Config struct {
	Store   Store
	Catalog *catalog.Catalog // tenant names on the verification page (optional)
	// Catalogs, when set, is read instead of Catalog: the catalog in force, which a reload
	// swaps.
	Catalogs func() *catalog.Catalog
	Blobs    blob.Store
	// Fetch fetches source URLs and delivers callbacks; its policy decides which addresses
	// may be reached. Give it a total timeout long enough for the largest accepted file.
	Fetch  *safefetch.Client
	Logger *slog.Logger
	// Processed, when set, counts finished asset processing by asset type, status and
	// failure code (the code is "" for Active assets).
	Processed *prometheus.CounterVec
	// PublicURL is the service's public base URL, the base of H5Link.
	PublicURL string
	// LinkTTL is the lifetime of asset links on reads and of the access handed to video tasks.
	LinkTTL time.Duration
	// VerifyTTL is how long a verification token may be used to complete the check.
	VerifyTTL time.Duration
	// MaxBytes caps a fetched source; MaxImageBytes caps images.
	MaxBytes, MaxImageBytes int64
	// Lease bounds one processing attempt (its job's run timeout); longer than the fetch
	// client's total timeout.
	Lease time.Duration
	// MaxAttempts bounds the attempts at one asset: a source that fails in a way worth
	// retrying (a timeout, a dropped connection, HTTP 408, 425, 429 or 5xx) is tried again
	// after RetryBackoff, then 4× that, up to MaxAttempts in all.
	MaxAttempts  int
	RetryBackoff time.Duration
	Concurrency  int
	// PollInterval is how often the job engine looks for asset work it was not told about
	// (assets of a process that died, callbacks due for a retry).
	PollInterval time.Duration
	// MinCheck is the shortest time between the start of the liveness check and its
	// confirmation that the server accepts.
	MinCheck time.Duration
	// CallbackAttempts bounds delivery attempts; CallbackBackoff is the wait after each
	// failure (the last value repeats).
	CallbackAttempts int
	CallbackBackoff  []time.Duration
	CallbackTimeout  time.Duration
	Probe            probe.Options
	Now              func() time.Time
	// Tracer, when set, makes each fetch of a source a span "media.fetch" (trace.go); nil: no
	// spans.
	Tracer trace.Tracer
	// Notify wakes the job engine when a job of the kind was enqueued (may be nil: the
	// engine finds it within PollInterval).
	Notify func(kind string)
	// Libraries returns the client of an ark_assets account by name (nil: no upstream
	// library; every tenant uses the service's own). upstream.go.
	Libraries func(name string) (Library, bool)
	// UpstreamPoll is the wait between two reads of an asset's status in its upstream
	// library; UpstreamDeadline how long an asset may wait for the library before it fails.
	UpstreamPoll, UpstreamDeadline time.Duration
	// Events announces assets ready or failed and verifications finished to the tenant's
	// webhook endpoints, each in the transaction of its state change (nil: none;
	// internal/webhook).
	Events webhook.Announcer
}

// Service implements the asset library. Its background work (processing, callbacks) runs as
// jobs of the kinds in Kinds, on the service's job engine.
type Service struct {
	cfg Config
	log *slog.Logger
}

// New returns a Service with defaults filled in.
func New(cfg Config) *Service {
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = DefaultLinkTTL
	}
	if cfg.VerifyTTL <= 0 {
		cfg.VerifyTTL = DefaultVerifyTTL
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.MaxImageBytes <= 0 {
		cfg.MaxImageBytes = min(DefaultMaxImageBytes, cfg.MaxBytes)
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.MinCheck < 0 {
		cfg.MinCheck = 0
	} else if cfg.MinCheck == 0 {
		cfg.MinCheck = DefaultMinCheck
	}
	if cfg.CallbackAttempts <= 0 {
		cfg.CallbackAttempts = DefaultCallbackAttempts
	}
	if len(cfg.CallbackBackoff) == 0 {
		cfg.CallbackBackoff = DefaultCallbackBackoff
	}
	if cfg.CallbackTimeout <= 0 {
		cfg.CallbackTimeout = DefaultCallbackTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, log: log}
}

func (s *Service) now() time.Time { return s.cfg.Now().UTC() }

func notFoundAsset() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: CodeAssetNotFound, Param: "Id",
		Message: "No asset with this Id exists in this library for this account."}
}

func notFoundGroup(param string) *apierr.Error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: CodeGroupNotFound, Param: param,
		Message: "No asset group with this " + param + " exists in this library for this account."}
}
