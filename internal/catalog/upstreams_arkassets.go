package catalog

import (
	"fmt"
	"slices"
)

// Kind ark_assets is ModelArk's asset library (docs/upstreams.md, "ModelArk asset library"): no
// product of its own. It is bound per tenant (Tenant.AssetLibrary), not per alias, because the
// asset-library routes carry no model field: nothing in an asset request names an alias, while
// every asset belongs to exactly one tenant. An ark account that shares the ModelArk account
// with the library names it (UpstreamAccount.AssetLibrary), so its Seedance tasks receive the
// library's asset ids as asset://<id>; any other engine keeps receiving signed links to the
// service's own copy.

// Regions of ModelArk's OpenAPI: Volcengine (China) and BytePlus (international).
var arkAssetsRegions = []string{"cn-beijing", "ap-southeast-1"}

// Image limits of ModelArk's asset library (its CreateAsset reference: each side 300 to 6000
// px, width/height 0.4 to 2.5, under 30 MB). The asset service checks them at submission.
const (
	ArkAssetsMinSide     = 300
	ArkAssetsMaxSide     = 6000
	ArkAssetsMinAspect   = 0.4
	ArkAssetsMaxAspect   = 2.5
	ArkAssetsMaxImageMiB = 30
)

// ArkAssetsFormats are the image formats the asset library takes, as the asset service's
// sniffer names them.
var ArkAssetsFormats = []string{"JPEG", "PNG", "WebP", "BMP", "TIFF", "GIF", "HEIC"}

// checkArkAssets: an ark_assets account has a region; asset_library appears on ark accounts
// only and names an ark_assets account; region and project_name belong to ark_assets.
func (c *Catalog) checkArkAssets() []error {
	var errs []error
	for _, u := range c.Upstreams {
		if u == nil {
			continue
		}
		add := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("upstream %q: "+format, append([]any{u.Name}, args...)...))
		}
		if u.Kind == KindArkAssets {
			if !slices.Contains(arkAssetsRegions, u.Region) {
				add("region must be cn-beijing (open.volcengineapi.com) or ap-southeast-1 (open.byteplusapi.com)")
			}
			if u.MaxInFlight != 0 || u.MaxConcurrent != 0 || u.Voice != "" || len(u.ResultHosts) > 0 {
				add("max_in_flight, max_concurrent, voice and result_hosts do not apply to kind ark_assets")
			}
		} else if u.Region != "" || u.ProjectName != "" {
			add("region and project_name apply to kind ark_assets only")
		}
		if u.AssetLibrary != "" {
			if u.Kind != KindArk {
				add("asset_library applies to kind ark only (the Seedance account that shares the library's ModelArk account)")
			} else if acc, ok := c.Upstream(u.AssetLibrary); !ok || acc.Kind != KindArkAssets {
				add("asset_library %q is not an account of kind ark_assets", u.AssetLibrary)
			}
		}
	}
	for _, t := range c.Tenants {
		if t == nil || t.AssetLibrary == "" {
			continue
		}
		if acc, ok := c.Upstream(t.AssetLibrary); !ok || acc.Kind != KindArkAssets {
			errs = append(errs, fmt.Errorf("tenant %q: asset_library %q is not an account of kind ark_assets", t.ID, t.AssetLibrary))
		}
	}
	return errs
}

// Library returns the tenant's asset-library account ("" and false: the service's own
// library).
func (c *Catalog) Library(tenantID string) (UpstreamAccount, bool) {
	t, ok := c.Tenant(tenantID)
	if !ok || t == nil || t.AssetLibrary == "" {
		return UpstreamAccount{}, false
	}
	return c.Upstream(t.AssetLibrary)
}
