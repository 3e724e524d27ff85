package contract

import "fmt"

// Route is the pipeline an alias is bound to. The values match the catalog's product names so
// that the catalog can store them verbatim.
type Route string

const (
	RouteNative      Route = "native"
	RouteEnhancement Route = "enhancement"
	RouteProduction  Route = "production"
	RouteSpeech      Route = "speech"
)

// Family is a native generation model family.
type Family string

const (
	FamilyStandard20 Family = "standard-2.0"
	FamilyFast20     Family = "fast-2.0"
	FamilyMini20     Family = "mini-2.0"
	Family25         Family = "2.5"
)

// Tier is a production tier; it is chosen by the alias, never by tool_version.
type Tier string

const (
	TierLite     Tier = "lite"
	TierStandard Tier = "standard"
	TierPro      Tier = "pro"
)

// EnhRoute is a standalone enhancement alias route. The "standard" alias serves both the
// Standard and the Professional tool versions, as the contract says.
type EnhRoute string

const (
	EnhLite     EnhRoute = "lite"
	EnhStandard EnhRoute = "standard"
)

// Families, Tiers and EnhRoutes list the values of each enum, in the order messages name them.
func Families() []Family { return []Family{FamilyStandard20, FamilyFast20, FamilyMini20, Family25} }

// Tiers lists the production tiers.
func Tiers() []Tier { return []Tier{TierLite, TierStandard, TierPro} }

// EnhRoutes lists the standalone enhancement routes.
func EnhRoutes() []EnhRoute { return []EnhRoute{EnhLite, EnhStandard} }

// Tool versions of standalone enhancement. Lite has none on the wire (ToolVersion is "").
const (
	ToolStandard     = "standard"
	ToolProfessional = "professional"
)

// Valid reports whether r is a known route.
func (r Route) Valid() bool {
	switch r {
	case RouteNative, RouteEnhancement, RouteProduction, RouteSpeech:
		return true
	}
	return false
}

// Valid reports whether f is a known family.
func (f Family) Valid() bool {
	switch f {
	case FamilyStandard20, FamilyFast20, FamilyMini20, Family25:
		return true
	}
	return false
}

// Valid reports whether t is a known production tier.
func (t Tier) Valid() bool {
	switch t {
	case TierLite, TierStandard, TierPro:
		return true
	}
	return false
}

// Valid reports whether r is a known enhancement alias route.
func (r EnhRoute) Valid() bool { return r == EnhLite || r == EnhStandard }

// Product is what an alias is bound to. Exactly the field of its route is set: Family for
// native, Tier for production, Enh for enhancement, none for speech.
type Product struct {
	Route  Route
	Family Family
	Tier   Tier
	Enh    EnhRoute
}

// Validate checks that the product is internally consistent. The catalog calls it when it
// loads, so a misconfigured alias fails at start-up rather than on a client request.
func (p Product) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("contract: product %+v: "+format, append([]any{p}, args...)...)
	}
	switch p.Route {
	case RouteNative:
		if !p.Family.Valid() {
			return bad("native needs a known family")
		}
		if p.Tier != "" || p.Enh != "" {
			return bad("native takes only a family")
		}
	case RouteProduction:
		if !p.Tier.Valid() {
			return bad("production needs a known tier")
		}
		if p.Family != "" || p.Enh != "" {
			return bad("production takes only a tier")
		}
	case RouteEnhancement:
		if !p.Enh.Valid() {
			return bad("enhancement needs a known route")
		}
		if p.Family != "" || p.Tier != "" {
			return bad("enhancement takes only a route")
		}
	case RouteSpeech:
		if p.Family != "" || p.Tier != "" || p.Enh != "" {
			return bad("speech takes no family, tier or route")
		}
	default:
		return bad("unknown route")
	}
	return nil
}

// Entitlements are the tenant's packages that decide 403 answers. The zero value enables
// nothing optional.
type Entitlements struct {
	Native4K              bool            // 4k on the Standard 2.0 family
	Enhance8K             bool            // the 8k band on enhancement Standard/Professional
	Production            bool            // access to the production route at all
	ProductionResolutions map[string]bool // "1080p", "2k", "4k"
	LastFrame             bool            // metadata.return_last_frame=true on production
}

// Mode is the generation mode, derived from metadata.content and omni_reference_task_type.
type Mode string

const (
	ModeText           Mode = "text"
	ModeFirstFrame     Mode = "first_frame"
	ModeFirstLastFrame Mode = "first_last_frame"
	ModeReference      Mode = "reference"
	ModeEdit           Mode = "edit"
	ModeExtend         Mode = "extend"
)

// ContentType is the media format of a content item.
type ContentType string

const (
	TypeImage ContentType = "image_url"
	TypeVideo ContentType = "video_url"
	TypeAudio ContentType = "audio_url"
)

// ContentRole is the purpose of a content item.
type ContentRole string

const (
	RoleReferenceImage ContentRole = "reference_image"
	RoleReferenceVideo ContentRole = "reference_video"
	RoleReferenceAudio ContentRole = "reference_audio"
	RoleFirstFrame     ContentRole = "first_frame"
	RoleLastFrame      ContentRole = "last_frame"
)

// ContentItem is one decoded metadata.content item, in request order.
type ContentItem struct {
	Type    ContentType
	Role    ContentRole
	URL     string // as sent (https://… or asset://<id>)
	IsAsset bool
	AssetID string // set when IsAsset
	Label   string // @Image1, @Video2, @Audio1: numbered by order within each type
}

// VideoRequest is a decoded and validated POST /v1/videos body. Exactly one of Native,
// Enhancement and Production is set, matching Route.
type VideoRequest struct {
	Route           Route
	Model           string
	Prompt          string
	HasPrompt       bool   // false when omitted; always false on enhancement (prompt is ignored)
	User            string // "" when omitted
	Seed            *int64 // native Standard/Fast/Mini only
	ClientRequestID string // trimmed; "" when omitted
	Content         []ContentItem

	Native      *NativeParams
	Enhancement *EnhancementParams
	Production  *ProductionParams
}

// NativeParams are the generation controls of a native request, defaults applied.
type NativeParams struct {
	Duration        int    // -1 when omitted (model default)
	Resolution      string // default 720p on every family
	Ratio           string // default adaptive
	GenerateAudio   *bool
	Watermark       *bool
	OutputFormat    string // mp4 (default) or mov
	ReturnLastFrame bool
	OmniTaskType    string // auto (default), reference, edit, extend; 2.5 only
	Mode            Mode
}

// EnhancementParams are the controls of a standalone enhancement request.
type EnhancementParams struct {
	VideoURL        string
	Duration        float64 // declared source seconds, used for the reservation only
	ToolVersion     string  // "" on Lite; "standard" (default) or "professional" on the Standard alias
	Resolution      string  // "1080p", "2k", "4k", "8k"; "" when ResolutionLimit is used
	ResolutionLimit int     // short-side pixel limit; 0 when Resolution is used
	FPS             *int
	BitrateLevel    string
	Bitrate         *int // wins over BitrateLevel when both are set; both are kept
	Scene           string
	EnhanceStyle    string
	BitDepth        *int
	Band            string // billing band: "720p" (up to 720p), "1080p", "2k", "4k", "8k"
}

// ProductionParams are the controls of a production request.
type ProductionParams struct {
	Tier            Tier
	Duration        int    // -1 when omitted
	Resolution      string // "1080p", "2k", "4k"; required
	Ratio           string // default adaptive
	GenerateAudio   *bool
	Watermark       *bool
	FPS             *int
	BitrateLevel    string
	Bitrate         *int // wins over BitrateLevel when both are set; both are kept
	Scene           string
	EnhanceStyle    string
	BitDepth        *int
	ReturnLastFrame bool
	OmniTaskType    string // auto (default), reference, edit, extend
	Mode            Mode
	HasVideoInput   bool // any reference_video item: selects the video-input rate
}
