package catalog

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"mediagen/internal/contract"
)

var (
	reID       = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	reAlias    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)
	reCurrency = regexp.MustCompile(`^[A-Z]{3}$`)
)

// check enforces what the decoder cannot: required fields, fields that belong to one product,
// uniqueness, and a rate for everything a tenant can buy, so a missing price stops the load
// instead of surfacing as a failed charge at the end of a paid job.
func (c *Catalog) check() error {
	if len(c.Tenants) == 0 {
		return errors.New("no tenants")
	}
	c.byID = make(map[string]*Tenant, len(c.Tenants))
	upstreamModels := map[string]bool{}
	for _, t := range c.Tenants {
		for _, a := range t.Aliases {
			upstreamModels[a.Model] = true
			if a.EnhanceModel != "" {
				upstreamModels[a.EnhanceModel] = true
			}
			for _, e := range append(slices.Clone(a.Upstreams), a.EnhanceUpstreams...) {
				if e.Model != "" {
					upstreamModels[e.Model] = true
				}
			}
		}
	}
	var errs []error
	for i, t := range c.Tenants {
		if t == nil {
			errs = append(errs, fmt.Errorf("tenants[%d] is empty", i))
			continue
		}
		if !reID.MatchString(t.ID) {
			errs = append(errs, fmt.Errorf("tenants[%d]: id %q must be 1-64 lower-case letters, digits, '-' or '_'", i, t.ID))
			continue
		}
		if _, dup := c.byID[t.ID]; dup {
			errs = append(errs, fmt.Errorf("tenant %q is defined twice", t.ID))
			continue
		}
		c.byID[t.ID] = t
		t.limits = resolveLimits(c.Limits, t.LimitSettings)
		errs = append(errs, t.check(upstreamModels)...)
	}
	errs = append(errs, c.checkAddresses()...)
	errs = append(errs, c.checkVirtualGroups()...)
	errs = append(errs, c.checkUpstreams()...)
	errs = append(errs, c.checkArkAssets()...)
	errs = append(errs, c.checkBindings()...)
	c.warnings = c.costWarnings()
	return errors.Join(errs...)
}

// checkBindings refuses an alias bound to an account that does not exist or whose kind
// cannot serve the alias's product.
func (c *Catalog) checkBindings() []error {
	var errs []error
	for _, t := range c.Tenants {
		if t == nil {
			continue
		}
		for _, a := range t.Aliases {
			if a == nil || a.Upstream == "" {
				continue
			}
			// Every account of the list must serve the alias's product on its own, by the
			// same per-kind rules as a single account; what a request asks beyond that is
			// held against each account's kind at submission, and a task is given only the
			// accounts that can do it (video.capable).
			for _, name := range a.Accounts() {
				acc, ok := c.Upstream(string(name))
				switch {
				case !ok:
					errs = append(errs, fmt.Errorf("tenant %q alias %q: unknown upstream %q: neither sandbox nor an account of the upstreams section", t.ID, a.Name, name))
				case !acc.Kind.Serves(a.Product):
					errs = append(errs, fmt.Errorf("tenant %q alias %q: upstream %q (kind %s) cannot serve product %s", t.ID, a.Name, name, acc.Kind, a.Product))
				case a.Product == ProductProduction:
					errs = append(errs, c.checkProductionGeneration(t, a, acc)...)
				}
			}
			if a.Product == ProductProduction {
				errs = append(errs, c.checkProductionEnhancement(t, a)...)
			}
		}
	}
	return errs
}

// checkProductionGeneration: the generation account generates at the alias's
// generate_resolution.
func (c *Catalog) checkProductionGeneration(t *Tenant, a *Alias, gen UpstreamAccount) []error {
	if rs := gen.Kind.GenerateResolutions(); rs != nil && !slices.Contains(rs, string(a.GenerateResolution)) {
		return []error{fmt.Errorf("tenant %q alias %q: upstream %q (kind %s) cannot generate at generate_resolution %s (it does %s)",
			t.ID, a.Name, gen.Name, gen.Kind, a.GenerateResolution, strings.Join(rs, ", "))}
	}
	if (gen.Kind == KindGemini || gen.Kind == KindVertex) && a.GenerateResolution == "1080p" && !geminiModelOf(a.Model).fullHD {
		return []error{fmt.Errorf("tenant %q alias %q: upstream %q (kind %s) cannot generate model %s at generate_resolution 1080p (it does 720p)",
			t.ID, a.Name, gen.Name, gen.Kind, a.Model)}
	}
	return nil
}

// checkProductionEnhancement: every enhancement account (enhance_upstream or
// enhance_upstreams) serves enhancement.
func (c *Catalog) checkProductionEnhancement(t *Tenant, a *Alias) []error {
	var errs []error
	for _, name := range a.EnhancementAccounts() {
		enh, ok := c.Upstream(string(name))
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("tenant %q alias %q: unknown enhance_upstream %q: neither sandbox nor an account of the upstreams section", t.ID, a.Name, name))
		case !enh.Kind.Serves(ProductEnhancement):
			errs = append(errs, fmt.Errorf("tenant %q alias %q: the enhancement half's upstream %q (kind %s) cannot serve enhancement; set enhance_upstream to an ffmpeg or mediakit account or sandbox", t.ID, a.Name, name, enh.Kind))
		}
	}
	return errs
}

func (t *Tenant) check(upstreamModels map[string]bool) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tenant %q: "+format, append([]any{t.ID}, args...)...))
	}
	if !reCurrency.MatchString(t.Currency) {
		add("currency %q must be a three-letter ISO 4217 code such as USD", t.Currency)
	}
	if w := t.WeightSetting; w != nil && (*w < 1 || *w > MaxWeight) {
		add("weight %d must be 1 to %d", *w, MaxWeight)
	}
	t.WebhooksSetting.check(add)
	p := t.Packages.Production
	for _, r := range p.Resolutions {
		if r != Res1080p && r != Res2K && r != Res4K {
			add("packages.production.resolutions: %q is not a production resolution (1080p, 2k, 4k)", r)
		}
	}
	if p.Enabled && len(p.Resolutions) == 0 {
		add("packages.production is enabled but lists no resolutions")
	}
	t.byAlias = make(map[string]*Alias, len(t.Aliases))
	for i, a := range t.Aliases {
		if a == nil {
			add("aliases[%d] is empty", i)
			continue
		}
		if !reAlias.MatchString(a.Name) {
			add("aliases[%d]: alias %q must be 1-128 letters, digits, '.', '_', ':' or '-'", i, a.Name)
			continue
		}
		if _, dup := t.byAlias[a.Name]; dup {
			add("alias %q is defined twice", a.Name)
			continue
		}
		if upstreamModels[a.Name] {
			add("alias %q is also an upstream model name; aliases must differ from upstream names", a.Name)
		}
		t.byAlias[a.Name] = a
		for _, msg := range a.check() {
			add("alias %q: %s", a.Name, msg)
		}
		if msg := t.rateMissing(a); msg != "" {
			add("alias %q: %s", a.Name, msg)
		}
	}
	for name := range t.Rates.Native {
		if a, ok := t.byAlias[name]; !ok || a.Product != ProductNative {
			add("rates.native: %q is not a native alias of this tenant", name)
		}
	}
	return errs
}

func (a *Alias) check() []string {
	msgs := a.checkRouting()
	if a.Product == "" {
		msgs = append(msgs, "product is required (native, production, enhancement or speech)")
	}
	if a.Upstream == "" {
		msgs = append(msgs, "upstream is required (sandbox, or an account of the upstreams section)")
	}
	if a.Model == "" {
		msgs = append(msgs, "model (the upstream model name) is required")
	}
	need := func(ok bool, field string) {
		if !ok {
			msgs = append(msgs, field+" is required for product "+string(a.Product))
		}
	}
	forbid := func(set bool, field string) {
		if set {
			msgs = append(msgs, field+" does not apply to product "+string(a.Product))
		}
	}
	switch a.Product {
	case ProductNative:
		need(a.Family != "", "family")
		forbid(a.Tier != "", "tier")
		forbid(a.Route != "", "route")
		forbid(a.GenerateResolution != "", "generate_resolution")
		forbid(a.EnhanceModel != "", "enhance_model")
		forbid(a.EnhanceUpstream != "", "enhance_upstream")
	case ProductProduction:
		need(a.Tier != "", "tier")
		need(a.GenerateResolution != "", "generate_resolution")
		need(a.EnhanceModel != "", "enhance_model")
		forbid(a.Family != "", "family")
		forbid(a.Route != "", "route")
	case ProductEnhancement:
		need(a.Route != "", "route")
		forbid(a.Family != "", "family")
		forbid(a.Tier != "", "tier")
		forbid(a.GenerateResolution != "", "generate_resolution")
		forbid(a.EnhanceModel != "", "enhance_model")
		forbid(a.EnhanceUpstream != "", "enhance_upstream")
	case ProductSpeech:
		forbid(a.Family != "", "family")
		forbid(a.Tier != "", "tier")
		forbid(a.Route != "", "route")
		forbid(a.GenerateResolution != "", "generate_resolution")
		forbid(a.EnhanceModel != "", "enhance_model")
		forbid(a.EnhanceUpstream != "", "enhance_upstream")
	}
	if a.GenerateResolution == Res2K {
		msgs = append(msgs, "generate_resolution must be a native resolution (480p, 720p, 1080p, 4k)")
	}
	return msgs
}

// rateMissing names the first rate the alias needs and the card lacks.
func (t *Tenant) rateMissing(a *Alias) string {
	r := t.Rates
	switch a.Product {
	case ProductNative:
		if _, ok := r.Native[a.Name]; !ok {
			return "no rate under rates.native for this alias"
		}
	case ProductSpeech:
		if r.Speech == nil {
			return "no rates.speech"
		}
	case ProductProduction:
		tr := r.Production.tier(a.Tier)
		if tr == nil {
			return fmt.Sprintf("no rates.production.%s", a.Tier)
		}
		for _, res := range t.Packages.Production.Resolutions {
			m := tr.resolution(res)
			if m == nil || m.NoVideoInput == nil || m.VideoInput == nil {
				return fmt.Sprintf("rates.production.%s.%s needs no_video_input and video_input", a.Tier, res)
			}
		}
	case ProductEnhancement:
		for _, tier := range enhancementTiers(a.Route) {
			for _, band := range Bands(tier, t.Packages.Enhance8K) {
				if _, ok := r.EnhancementRate(tier, band); !ok {
					return fmt.Sprintf("no rates.enhancement.%s.%s", tier, bandKey(band))
				}
			}
		}
	}
	return ""
}

func enhancementTiers(r EnhRoute) []string {
	if r == EnhRoute(contract.EnhLite) {
		return []string{"lite"}
	}
	return []string{"standard", "professional"}
}

func bandKey(b string) string {
	if b == "720p" {
		return "up_to_720p"
	}
	return b
}

var reGroupID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// checkVirtualGroups: each operator-granted virtual group has a well-formed id, unique across
// the catalog (ids are global), and a name of 1 to 128 characters.
func (c *Catalog) checkVirtualGroups() []error {
	var errs []error
	seen := map[string]string{}
	for _, t := range c.Tenants {
		if t == nil {
			continue
		}
		for i, g := range t.VirtualGroups {
			switch {
			case g == nil:
				errs = append(errs, fmt.Errorf("tenant %q: virtual_groups[%d] is empty", t.ID, i))
			case !reGroupID.MatchString(g.ID):
				errs = append(errs, fmt.Errorf("tenant %q: virtual_groups[%d]: id %q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", t.ID, i, g.ID))
			case seen[g.ID] != "":
				errs = append(errs, fmt.Errorf("tenant %q: virtual group %q is already defined for tenant %q; ids are unique across the catalog", t.ID, g.ID, seen[g.ID]))
			case strings.TrimSpace(g.Name) == "" || utf8.RuneCountInString(g.Name) > 128:
				errs = append(errs, fmt.Errorf("tenant %q: virtual group %q needs a name of 1 to 128 characters", t.ID, g.ID))
			case utf8.RuneCountInString(g.Description) > 1024:
				errs = append(errs, fmt.Errorf("tenant %q: virtual group %q: description is longer than 1024 characters", t.ID, g.ID))
			default:
				seen[g.ID] = t.ID
			}
		}
	}
	return errs
}
