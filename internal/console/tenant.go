package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"

	"mediagen/internal/apierr"
	"mediagen/internal/asset"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// TenantStore is what the tenant console reads itself; the SQL store satisfies it.
type TenantStore interface {
	KeyByHash(ctx context.Context, hash []byte) (store.Key, error)
	Balance(ctx context.Context, keyID string) (store.Balance, error)
	UsageReport(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
}

// TenantConfig is what the tenant console needs: the public API's own services.
type TenantConfig struct {
	Common
	Store    TenantStore
	Catalogs *catalog.Holder
	Videos   *video.Service
	Speech   *speech.Service // nil: the speech form is not offered
	Assets   *asset.Service  // nil: the assets page says the library is off
	Links    video.Linker    // mints the signed links results are played from
	// Webhooks serves the Webhooks page to tenants whose switch is on (nil: no page).
	Webhooks *webhook.Service
	// Admit applies the public API's limits to a console write as to an API request (the
	// returned end is called when it is done); nil: no limits beyond the services' own.
	Admit func(c keys.Caller) (end func(), err error)
}

// Tenant is the tenant console, served on the public address under /console/.
type Tenant struct {
	*core
	cfg TenantConfig
}

// NewTenant builds the tenant console and its routing table.
func NewTenant(c TenantConfig) (*Tenant, error) {
	if c.Store == nil || c.Catalogs == nil || c.Videos == nil {
		return nil, errors.New("console: the tenant console needs a store, a catalog and the video service")
	}
	k, err := newCore(c.Common, KindTenant, template.FuncMap{})
	if err != nil {
		return nil, err
	}
	t := &Tenant{core: k, cfg: c}
	k.check = t.checkKey
	k.authenticate = t.authenticate
	k.linkBase = func(r *http.Request, s *Session) string { return s.Caller.Tenant.AddressFor(r.Host) }
	k.httpsAddress = func(host string) bool {
		owner, ok := t.cfg.Catalogs.Current().TenantByHost(host)
		return ok && strings.HasPrefix(owner.AddressFor(host), "https://")
	}
	t.routes()
	return t, nil
}

// checkKey verifies a typed API key like the public API does and returns its hash.
func (t *Tenant) checkKey(ctx context.Context, secret string) ([]byte, error) {
	if !keys.WellFormed(secret) {
		return nil, &apierr.Error{Kind: apierr.KindAuthentication, Code: "invalid_api_key", Message: "The API key is not valid."}
	}
	hash := keys.Hash(secret)
	var s Session
	if err := t.authenticate(ctx, hash, &s); err != nil {
		return nil, err
	}
	return hash, nil
}

// authenticate is the public API's key check (httpapi's auth): the key exists, is usable now
// with this secret, and its tenant is configured.
func (t *Tenant) authenticate(ctx context.Context, hash []byte, s *Session) error {
	key, err := t.cfg.Store.KeyByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return &apierr.Error{Kind: apierr.KindAuthentication, Code: "invalid_api_key", Message: "The API key is not valid."}
	}
	if err != nil {
		return fmt.Errorf("console: key: %w", err)
	}
	cat := t.cfg.Catalogs.Current()
	// On a tenant's own address only its keys sign in, and another's is refused as an
	// unknown one is (the public API's rule, httpapi's auth).
	if owner, ok := cat.TenantByHost(requestHost(ctx)); ok && owner.ID != key.TenantID {
		return &apierr.Error{Kind: apierr.KindAuthentication, Code: "invalid_api_key", Message: "The API key is not valid."}
	}
	if no := keys.Usable(key, hash, t.Now()); no != nil {
		return &apierr.Error{Kind: apierr.KindAuthentication, Code: no.Code, Message: no.Message}
	}
	tenant, ok := cat.Tenant(key.TenantID)
	if !ok {
		return apierr.New(apierr.KindPermission, "The API key's account is not configured on this service. Contact the operator.")
	}
	s.Caller = keys.Caller{Key: key, Tenant: tenant, Catalog: cat}
	return nil
}

// routes is the tenant console's routing table; each page's handler is in its own file.
func (t *Tenant) routes() {
	t.Page("GET /console/{$}", t.tasks)
	t.Page("GET /console/tasks/{id}", t.task)
	t.Page("GET /console/tasks/{id}/status.json", t.taskStatusJSON)
	t.Page("GET /console/speech/{id}", t.speechRecord)
	t.Page("GET /console/usage", t.usage)
	t.Page("GET /console/assets", t.assets)
	t.Page("POST /console/assets", t.registerAsset)
	t.Page("POST /console/assets/groups", t.createAssetGroup)
	t.Page("GET /console/assets/{id}/status", t.assetStatus)
	t.Page("GET /console/create", t.createForm)
	t.Page("POST /console/create/preview", t.createPreview)
	t.Page("POST /console/create", t.createTask)
	t.Page("GET /console/webhooks", t.webhooks)
	t.Page("POST /console/webhooks", t.createEndpoint)
	t.Page("GET /console/webhooks/{id}", t.endpointLog)
	t.Page("POST /console/webhooks/{id}/{action}", t.endpointAction)
	t.Page("POST /console/webhooks/{id}/deliveries/{delivery}/redeliver", t.redeliver)
}
