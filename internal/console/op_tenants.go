package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
)

// tenantsPerPage is how many tenants GET /console/tenants shows at once. Each tenant is a card
// of its aliases, rates and limits (about 3 KB of HTML with the demo's aliases): every tenant
// of an operator with a thousand is megabytes, so the page is paged and searchable.
const tenantsPerPage = 20

// maxTenantSearch bounds the search text (a tenant id or name is far shorter).
const maxTenantSearch = 200

// tenantsPage is GET /console/tenants: a page of the catalog's tenants, those whose id or name
// contains Query (case-insensitive).
type tenantsPage struct {
	Tenants []tenantView
	// Reloaded is the number of a reload request this page was redirected to after (0: none).
	Reloaded int64
	Query    string
	// Total is how many tenants match; Page is this page's number (1 first); Prev and Next the
	// neighbours' URLs ("" at the ends).
	Total, Page, Pages int
	Prev, Next         string
}

// tenantView is one tenant as the catalog says: its aliases and what they run on, packages,
// rates and limits.
type tenantView struct {
	ID, Name, Currency string
	Weight             int
	Addresses          []string // the tenant's own base URLs (none: the service's)
	Packages           []string
	Aliases            []aliasView
	Rates              []rateView
	Limits             []limitView
	DailyCap           string
	MonthlyCap         string
}

type aliasView struct {
	Name, Product, Variant string
	Upstream, Model        string
	// Enhance is the enhancement half of a production alias ("" otherwise): account and model.
	EnhanceUpstream, EnhanceModel string
}

type rateView struct{ What, Rate string }

type limitView struct{ What, Key, Tenant string }

// tenants is GET /console/tenants[?q=text][&page=n].
func (o *Operator) tenants(w http.ResponseWriter, r *http.Request, s *Session) error {
	list, err := o.cfg.Admin.Tenants(r.Context(), o.actor(r, s))
	if err != nil {
		return err
	}
	cat := o.cfg.Admin.Catalog()
	v := r.URL.Query()
	p := tenantsPage{Query: strings.TrimSpace(v.Get("q")), Page: 1}
	if n, err := strconv.ParseInt(v.Get("reloaded"), 10, 64); err == nil && n > 0 {
		p.Reloaded = n
	}
	if len(p.Query) > maxTenantSearch {
		return apierr.Invalid("q", fmt.Sprintf("The search is longer than %d characters.", maxTenantSearch))
	}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return apierr.Invalid("page", "page is a page number, 1 or more.")
		}
		p.Page = n
	}
	match := list.Data
	if p.Query != "" {
		q := strings.ToLower(p.Query)
		match = slices.DeleteFunc(slices.Clone(list.Data), func(t admin.Tenant) bool {
			return !strings.Contains(strings.ToLower(t.ID), q) && !strings.Contains(strings.ToLower(t.Name), q)
		})
	}
	p.Total = len(match)
	p.Pages = max(1, (p.Total+tenantsPerPage-1)/tenantsPerPage)
	lo := min((p.Page-1)*tenantsPerPage, p.Total)
	hi := min(lo+tenantsPerPage, p.Total)
	link := func(page int) string {
		q := url.Values{}
		if p.Query != "" {
			q.Set("q", p.Query)
		}
		q.Set("page", strconv.Itoa(page))
		return "/console/tenants?" + q.Encode()
	}
	if p.Page > 1 {
		p.Prev = link(min(p.Page-1, p.Pages))
	}
	if hi < p.Total {
		p.Next = link(p.Page + 1)
	}
	for _, t := range match[lo:hi] {
		ct, ok := cat.Tenant(t.ID)
		if !ok {
			p.Tenants = append(p.Tenants, tenantView{ID: t.ID, Name: t.Name, Currency: t.Currency})
			continue
		}
		p.Tenants = append(p.Tenants, viewTenant(ct))
	}
	o.Render(w, r, s, "op_tenants", "Tenants", p)
	return nil
}

func viewTenant(t *catalog.Tenant) tenantView {
	v := tenantView{ID: t.ID, Name: t.Name, Currency: t.Currency, Weight: t.Weight(), Addresses: t.Addresses()}
	pk := t.Packages
	if pk.Native4K {
		v.Packages = append(v.Packages, "native 4k")
	}
	if pk.Enhance8K {
		v.Packages = append(v.Packages, "enhancement 8k")
	}
	if pk.Production.Enabled {
		res := make([]string, 0, len(pk.Production.Resolutions))
		for _, r := range pk.Production.Resolutions {
			res = append(res, string(r))
		}
		p := "production (" + strings.Join(res, ", ")
		if pk.Production.LastFrame {
			p += "; last frame"
		}
		v.Packages = append(v.Packages, p+")")
	}
	for _, a := range t.Aliases {
		av := aliasView{Name: a.Name, Product: string(a.Product), Upstream: string(a.Upstream), Model: a.Model}
		switch a.Product {
		case catalog.ProductNative:
			av.Variant = string(a.Family)
		case catalog.ProductProduction:
			av.Variant = string(a.Tier)
			if a.GenerateResolution != "" {
				av.Variant += ", generates at " + string(a.GenerateResolution)
			}
			av.EnhanceUpstream, av.EnhanceModel = string(a.EnhancementUpstream()), a.EnhanceModel
		case catalog.ProductEnhancement:
			av.Variant = string(a.Route)
		}
		v.Aliases = append(v.Aliases, av)
	}
	v.Rates = flattenRates(t.Rates, t.Aliases)
	l := t.Limits()
	v.Limits = []limitView{
		{"Requests per second", l.Key.RequestsPerSecond.String(), l.Tenant.RequestsPerSecond.String()},
		{"Burst", burst(l.Key.Burst), burst(l.Tenant.Burst)},
		{"Concurrent requests", l.Key.ConcurrentRequests.String(), "—"},
		{"Video tasks in flight", l.Key.VideoTasksInFlight.String(), l.Tenant.VideoTasksInFlight.String()},
		{"Speech in flight", l.Key.SpeechInFlight.String(), l.Tenant.SpeechInFlight.String()},
		{"Asset ingests in flight", l.Key.AssetIngestsInFlight.String(), l.Tenant.AssetIngestsInFlight.String()},
	}
	daily, monthly := t.SpendCaps.Amounts()
	v.DailyCap, v.MonthlyCap = daily.String(), monthly.String() // "none" where there is no cap
	return v
}

func burst(b catalog.Burst) string {
	if b == catalog.Unlimited {
		return "unlimited"
	}
	return fmt.Sprint(int64(b))
}

// flattenRates lists the rate card's set prices, one line each.
func flattenRates(r catalog.Rates, aliases []*catalog.Alias) []rateView {
	var out []rateView
	add := func(what string, rate *catalog.Rate) {
		if rate != nil {
			out = append(out, rateView{What: what, Rate: displayMoney(rate.Micros())})
		}
	}
	for _, a := range aliases {
		if rate, ok := r.Native[a.Name]; ok {
			add("native "+a.Name+" per 1M completion tokens", &rate)
		}
	}
	tiers := []struct {
		name string
		r    *catalog.ProductionTierRates
	}{{"lite", r.Production.Lite}, {"standard", r.Production.Standard}, {"pro", r.Production.Pro}}
	for _, tr := range tiers {
		if tr.r == nil {
			continue
		}
		for _, res := range []struct {
			name string
			m    *catalog.InputModeRates
		}{{"1080p", tr.r.R1080p}, {"2k", tr.r.R2K}, {"4k", tr.r.R4K}} {
			if res.m == nil {
				continue
			}
			add("production "+tr.name+" "+res.name+" per second, no video input", res.m.NoVideoInput)
			add("production "+tr.name+" "+res.name+" per second, video input", res.m.VideoInput)
		}
	}
	if l := r.Enhancement.Lite; l != nil {
		add("enhancement lite up to 720p per second", l.UpTo720p)
		add("enhancement lite 1080p per second", l.R1080p)
		add("enhancement lite 2k per second", l.R2K)
		add("enhancement lite 4k per second", l.R4K)
	}
	for _, fb := range []struct {
		name string
		b    *catalog.FullBands
	}{{"standard", r.Enhancement.Standard}, {"professional", r.Enhancement.Professional}} {
		if fb.b == nil {
			continue
		}
		add("enhancement "+fb.name+" up to 720p per second", fb.b.UpTo720p)
		add("enhancement "+fb.name+" 1080p per second", fb.b.R1080p)
		add("enhancement "+fb.name+" 2k per second", fb.b.R2K)
		add("enhancement "+fb.name+" 4k per second", fb.b.R4K)
		add("enhancement "+fb.name+" 8k per second", fb.b.R8K)
	}
	add("speech per second of audio", r.Speech)
	return out
}

// reloadConfirm is the confirmation step of a catalog reload (owners only).
func (o *Operator) reloadConfirm(w http.ResponseWriter, r *http.Request, s *Session) error {
	if err := admin.Need(s.Actor, admin.RoleOwner); err != nil {
		return err
	}
	o.Render(w, r, s, "op_tenants_reload", "Reload the catalog", nil)
	return nil
}

// reload records a catalog reload request that every replica follows (owners only; audited
// as catalog.reload by the admin service).
func (o *Operator) reload(w http.ResponseWriter, r *http.Request, s *Session) error {
	req, err := o.cfg.Admin.RequestCatalogReload(r.Context(), o.actor(r, s))
	if err != nil {
		return err
	}
	http.Redirect(w, r, fmt.Sprintf("/console/tenants?reloaded=%d", req.Request), http.StatusSeeOther)
	return nil
}
