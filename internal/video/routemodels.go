package video

import (
	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
)

// Routing across kinds (docs/upstreams.md, "Routing"): an alias over a Kling and a DashScope
// account names each account's model, and a task is given only the accounts that can do
// what it asks. Both are fixed at acceptance, in the task's Stored request, so a catalog
// reload never changes what an accepted task sends.

// modelOn is the upstream model the task's generation half (or a standalone enhancement)
// runs as on account: the account's own (Models), else Model.
func (r Stored) modelOn(account string) string {
	if m, ok := r.Models[account]; ok {
		return m
	}
	return r.Model
}

// enhanceModelOn is the model a production task's enhancement half runs as on account.
func (r Stored) enhanceModelOn(account string) string {
	if m, ok := r.EnhanceModels[account]; ok {
		return m
	}
	return r.EnhanceModel
}

// capable are the alias's accounts whose kind can serve req, in the catalog's order, with
// their weights (strategy weighted). An account the lookup does not know (an engine a test
// or the sandbox supplies) is kept, as before. When none can, refused is the first account's
// refusal: the request is refused at submission, never accepted and failed later.
func capable(alias *catalog.Alias, req *contract.VideoRequest, accounts func(string) (catalog.UpstreamAccount, bool)) (routes []string, weights []int, refused error) {
	for i, name := range alias.Accounts() {
		if accounts != nil {
			if acc, ok := accounts(string(name)); ok {
				if param, msg := acc.Kind.RefuseModel(alias.ModelOf(name), req); param != "" {
					if refused == nil {
						refused = apierr.Invalid(param, msg)
					}
					continue
				}
			}
		}
		routes = append(routes, string(name))
		if i < len(alias.Weights) {
			weights = append(weights, alias.Weights[i])
		}
	}
	if len(routes) > 0 {
		refused = nil
	}
	if refused == nil {
		refused = enhancementRefused(alias, req, accounts)
	}
	return routes, weights, refused
}

// enhancementRefused is the refusal of a production request by one of the alias's
// enhancement accounts (an AI MediaKit account takes no bitrate in kbps, for one): the half
// may run on any of them, so a request one of them cannot do is refused at submission.
func enhancementRefused(alias *catalog.Alias, req *contract.VideoRequest, accounts func(string) (catalog.UpstreamAccount, bool)) error {
	if alias.Product != catalog.ProductProduction || accounts == nil {
		return nil
	}
	for _, name := range alias.EnhancementAccounts() {
		if acc, ok := accounts(string(name)); ok && !acc.Kind.Serves(catalog.ProductProduction) {
			if param, msg := acc.Kind.Refuse(req); param != "" {
				return apierr.Invalid(param, msg)
			}
		}
	}
	return nil
}

// bind fills the stored request's accounts and models from the alias: the first capable
// account and its model, and for a routed task the capable accounts, their weights and each
// account's model where it differs from the first's.
func bind(d *Stored, alias *catalog.Alias, routes []string, weights []int) {
	d.Upstream, d.Model = routes[0], alias.ModelOf(catalog.Upstream(routes[0]))
	d.GenerateRes = string(alias.GenerateResolution)
	if alias.Product == catalog.ProductProduction {
		enh := alias.EnhancementUpstream()
		if alias.EnhanceUpstream != "" || enh != catalog.Upstream(routes[0]) {
			// The enhancement half runs on the alias's enhancement account, also when the
			// generation's first capable account is another.
			d.EnhanceUpstream = string(enh)
		}
		d.EnhanceModel = alias.EnhanceModelOf(enh)
		if accts := alias.EnhancementAccounts(); len(accts) > 1 {
			d.EnhanceUpstreams = names(accts)
			d.EnhanceModels = differing(d.EnhanceUpstreams, d.EnhanceModel, alias.EnhanceModelOf)
		}
	}
	if len(routes) > 1 {
		d.Upstreams, d.Strategy, d.Weights = routes, string(alias.RoutingStrategy()), weights
		d.Models = differing(routes, d.Model, alias.ModelOf)
	}
}

// differing maps each account whose model is not def to its model (nil when none is).
func differing(accounts []string, def string, of func(catalog.Upstream) string) map[string]string {
	var m map[string]string
	for _, a := range accounts {
		if model := of(catalog.Upstream(a)); model != def {
			if m == nil {
				m = map[string]string{}
			}
			m[a] = model
		}
	}
	return m
}
