// Package catalog holds what the operator decides per tenant: aliases and the products they map
// to, packages (what is enabled), and rate cards. It is loaded from one YAML file, decoded
// strictly (unknown keys, wrong types and unknown enum values stop the load with their line), and
// is read-only afterwards, so lookups need no locks: a reload builds a new Catalog and swaps it
// in whole (Holder).
package catalog

import (
	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// Rate is a non-negative price in micro-units, read exactly from the decimal text of the file,
// at most MaxRate.
type Rate money.Micros

// MaxRate is the ceiling of every rate and cost in the catalog, per unit (second, million
// tokens, character): a million currency units. The dearest real rate is a few units per
// second; the ceiling is there so that a rate times the largest quantity a request can bring
// (checked multiplication in billing, docs/limits.md "Money") stays far below the ceiling of
// one amount (money.MaxAmount), and a typo of six extra zeros stops the load.
const MaxRate = 1_000_000 * money.Scale

// Micros returns the rate as an amount.
func (r Rate) Micros() money.Micros { return money.Micros(r) }

// Product is what an alias sells.
type Product string

const (
	ProductNative      Product = "native"
	ProductProduction  Product = "production"
	ProductEnhancement Product = "enhancement"
	ProductSpeech      Product = "speech"
)

// Family, Tier and EnhRoute are the contract's enums (contract.Family, contract.Tier,
// contract.EnhRoute) as the catalog file spells them: the same values, one definition, with a
// strict YAML decoder of their own (yaml.go). Convert with contract.Family(a.Family).
type (
	Family   contract.Family
	Tier     contract.Tier
	EnhRoute contract.EnhRoute
)

// Resolution is a named output resolution used by packages and rate cards.
type Resolution string

const (
	Res480p  Resolution = "480p"
	Res720p  Resolution = "720p"
	Res1080p Resolution = "1080p"
	Res2K    Resolution = "2k"
	Res4K    Resolution = "4k"
)

// Upstream names the account an alias runs on: "sandbox" (built in) or one of the catalog's
// upstreams.
type Upstream string

const UpstreamSandbox Upstream = "sandbox"

// Catalog is the whole operator file.
type Catalog struct {
	// Limits apply to every tenant, field by field, where the tenant's own limits say nothing.
	Limits  LimitSettings `yaml:"limits"`
	Tenants []*Tenant     `yaml:"tenants"`
	// Upstreams are the named upstream accounts aliases bind to, besides the built-in
	// sandbox (upstreams.go, docs/upstreams.md).
	Upstreams []*UpstreamAccount `yaml:"upstreams"`

	byID     map[string]*Tenant
	warnings []string
	// byHost and byName index the tenants' addresses (addresses.go): by the host key a
	// request's Host header is matched on, and by bare host name, the unit a tenant owns.
	byHost, byName map[string]*Tenant
}

// Tenant is one customer organisation.
type Tenant struct {
	ID       string   `yaml:"id"`
	Name     string   `yaml:"name"`
	Currency string   `yaml:"currency"`
	Packages Packages `yaml:"packages"`
	Aliases  []*Alias `yaml:"aliases"`
	Rates    Rates    `yaml:"rates"`
	// VirtualGroups are virtual asset groups the operator grants to the tenant (optional).
	VirtualGroups []*VirtualGroup `yaml:"virtual_groups"`
	// AssetLibrary, when set, names the ark_assets account the tenant's virtual assets are
	// registered in and its real-person verifications run on (upstreams_arkassets.go); absent:
	// the service's own library.
	AssetLibrary string `yaml:"asset_library"`
	// LimitSettings are the tenant's own limits (limits.go); Limits() resolves them.
	LimitSettings LimitSettings `yaml:"limits"`
	// WeightSetting is the tenant's share of the job engine's workers against other tenants
	// with work waiting (optional, 1 to MaxWeight; absent: 1): with weight 3 against 1 it gets
	// three workers for the other's one. Weight() reads it.
	WeightSetting *int `yaml:"weight"`
	// SpendCaps cap what all the tenant's keys together spend per UTC day and month
	// (optional; docs/billing.md, "Spend caps"). They live here, not in the database, because
	// tenants themselves do: a tenant is a catalog entry, and its caps change with it.
	SpendCaps SpendCaps `yaml:"spend_caps"`
	// WebhooksSetting is the tenant's webhook switch (webhooks.go), off unless set.
	WebhooksSetting Webhooks `yaml:"webhooks"`
	// AddressesSetting are the tenant's own base URLs (optional; addresses.go): links and
	// pages shown to the tenant use them, and requests on them take only its keys.
	// Addresses() reads the checked, canonical form.
	AddressesSetting []string `yaml:"addresses"`

	byAlias   map[string]*Alias
	limits    Limits
	addresses []address
}

// SpendCaps are caps on spending per UTC calendar day and month, in the tenant's currency.
// Absent or none is no cap; 0 is a cap that lets nothing be spent (the same meaning as a key's
// cap in the admin API, the CLI and the console: docs/billing.md, "Spend caps").
type SpendCaps struct {
	Daily   Cap `yaml:"daily"`
	Monthly Cap `yaml:"monthly"`
}

// Cap is one cap of spend_caps (yaml.go reads it).
type Cap struct{ money.Cap }

// Amounts returns the caps.
func (c SpendCaps) Amounts() (daily, monthly money.Cap) { return c.Daily.Cap, c.Monthly.Cap }

// VirtualGroup is an operator-granted virtual asset group: its id (unique across the
// catalog), name and optional description. See docs/assets.md.
type VirtualGroup struct {
	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
}

// Packages are the optional capabilities a tenant has bought.
type Packages struct {
	Native4K   bool              `yaml:"native_4k"`  // 4k on the standard 2.0 family
	Enhance8K  bool              `yaml:"enhance_8k"` // 8k on enhancement standard/professional
	Production ProductionPackage `yaml:"production"`
}

// ProductionPackage is access to the production route.
type ProductionPackage struct {
	Enabled     bool         `yaml:"enabled"`
	Resolutions []Resolution `yaml:"resolutions"` // of 1080p, 2k, 4k
	LastFrame   bool         `yaml:"last_frame"`
}

// Alias is a tenant-facing model name and what it is bound to.
type Alias struct {
	Name     string   `yaml:"alias"`
	Product  Product  `yaml:"product"`
	Family   Family   `yaml:"family,omitempty"` // native
	Tier     Tier     `yaml:"tier,omitempty"`   // production
	Route    EnhRoute `yaml:"route,omitempty"`  // enhancement
	Upstream Upstream `yaml:"upstream"`
	Model    string   `yaml:"model"` // upstream model name (generation model on production)

	// Production only: the native resolution the generation half renders at, and the upstream
	// model of the enhancement half (whose route follows the tier: lite→lite,
	// standard→standard, pro→professional).
	GenerateResolution Resolution `yaml:"generate_resolution,omitempty"`
	EnhanceModel       string     `yaml:"enhance_model,omitempty"`
	// EnhanceUpstream is the account of the enhancement half (production only; default: the
	// alias's upstream). It lets a remote generator (ark, openai) feed a local enhancer (ffmpeg).
	EnhanceUpstream Upstream `yaml:"enhance_upstream,omitempty"`

	// Routing (routing.go, docs/upstreams.md#routing): several accounts instead of upstream,
	// how a task picks among them, and the weights of strategy weighted (one per account).
	// The first account becomes Upstream once checked. EnhanceUpstreams is the list of a
	// production alias's enhancement half (tried in priority order). Each entry may name the
	// model its account runs (routing_models.go); Model and EnhanceModel are the default.
	Upstreams        []RouteEntry `yaml:"upstreams,omitempty"`
	Strategy         Strategy     `yaml:"strategy,omitempty"`
	Weights          []int        `yaml:"weights,omitempty"`
	EnhanceUpstreams []RouteEntry `yaml:"enhance_upstreams,omitempty"`
}

// EnhancementUpstream is the account that runs the alias's enhancement half: enhance_upstream,
// or the alias's upstream.
func (a *Alias) EnhancementUpstream() Upstream {
	if a.EnhanceUpstream != "" {
		return a.EnhanceUpstream
	}
	return a.Upstream
}

// Rates is the tenant's rate card, in micro-units of the tenant's currency.
type Rates struct {
	// Native: per million completion tokens, by alias name.
	Native      map[string]Rate  `yaml:"native"`
	Production  ProductionRates  `yaml:"production"`
	Enhancement EnhancementRates `yaml:"enhancement"`
	// Speech: per second of generated audio.
	Speech *Rate `yaml:"speech"`
}

// ProductionRates are per chargeable second, by tier.
type ProductionRates struct {
	Lite     *ProductionTierRates `yaml:"lite"`
	Standard *ProductionTierRates `yaml:"standard"`
	Pro      *ProductionTierRates `yaml:"pro"`
}

// ProductionTierRates are per chargeable second, by final resolution.
type ProductionTierRates struct {
	R1080p *InputModeRates `yaml:"1080p"`
	R2K    *InputModeRates `yaml:"2k"`
	R4K    *InputModeRates `yaml:"4k"`
}

// InputModeRates distinguish requests with and without video input, as the contract prices them.
type InputModeRates struct {
	NoVideoInput *Rate `yaml:"no_video_input"`
	VideoInput   *Rate `yaml:"video_input"`
}

// EnhancementRates are per chargeable second for the 14 tier/band combinations.
type EnhancementRates struct {
	Lite         *LiteBands `yaml:"lite"`
	Standard     *FullBands `yaml:"standard"`
	Professional *FullBands `yaml:"professional"`
}

// LiteBands has no 8K: Lite does not output it, so an 8k key under lite is an unknown key.
type LiteBands struct {
	UpTo720p *Rate `yaml:"up_to_720p"`
	R1080p   *Rate `yaml:"1080p"`
	R2K      *Rate `yaml:"2k"`
	R4K      *Rate `yaml:"4k"`
}

// FullBands are the Standard and Professional bands.
type FullBands struct {
	UpTo720p *Rate `yaml:"up_to_720p"`
	R1080p   *Rate `yaml:"1080p"`
	R2K      *Rate `yaml:"2k"`
	R4K      *Rate `yaml:"4k"`
	R8K      *Rate `yaml:"8k"`
}

// MaxWeight is the largest tenant weight: a weight is a share of the workers, and a share
// above 100 to 1 starves the other tenant in all but name (the job claim clamps to it too).
const MaxWeight = 100

// Weight is the tenant's share of the job engine's workers (1 when the catalog says nothing).
func (t *Tenant) Weight() int {
	if t.WeightSetting == nil {
		return 1
	}
	return *t.WeightSetting
}

// Weights gives the weight of every tenant whose weight is not 1, by tenant id: what the job
// engine's claims need (jobs.Config.Weights).
func (c *Catalog) Weights() map[string]int {
	out := map[string]int{}
	for _, t := range c.Tenants {
		if t != nil && t.Weight() != 1 {
			out[t.ID] = t.Weight()
		}
	}
	return out
}
