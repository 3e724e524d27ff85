package catalog

// Webhooks is a tenant's webhook switch (docs/webhooks.md). Off by default: the contract says
// video callbacks are not supported "unless separately enabled and confirmed by the operator",
// so a tenant whose entry says nothing is never sent anything and sees no webhook routes.
type Webhooks struct {
	Enabled bool `yaml:"enabled"`
	// MaxEndpoints bounds the endpoints the tenant may register (absent or 0:
	// DefaultMaxWebhookEndpoints; at most MaxWebhookEndpoints): each endpoint multiplies every
	// event into one delivery job.
	MaxEndpoints int `yaml:"max_endpoints"`
}

// DefaultMaxWebhookEndpoints is a tenant's endpoint bound when the catalog names none.
const DefaultMaxWebhookEndpoints = 5

// MaxWebhookEndpoints is the largest max_endpoints: every outcome fans out to every endpoint,
// so the bound caps the deliveries one task can cause.
const MaxWebhookEndpoints = 50

// WebhooksEnabled reports whether the operator switched webhooks on for the tenant.
func (t *Tenant) WebhooksEnabled() bool { return t != nil && t.WebhooksSetting.Enabled }

// WebhookEndpointLimit is how many endpoints the tenant may have (0 when webhooks are off).
func (t *Tenant) WebhookEndpointLimit() int {
	if !t.WebhooksEnabled() {
		return 0
	}
	if n := t.WebhooksSetting.MaxEndpoints; n > 0 {
		return n
	}
	return DefaultMaxWebhookEndpoints
}

func (w Webhooks) check(add func(format string, args ...any)) {
	if w.MaxEndpoints < 0 || w.MaxEndpoints > MaxWebhookEndpoints {
		add("webhooks.max_endpoints %d must be 1 to %d", w.MaxEndpoints, MaxWebhookEndpoints)
	}
}

// AnyWebhooks reports whether any tenant has webhooks on: while none has, the webhook routes
// are unknown paths for every caller, authenticated or not.
func (c *Catalog) AnyWebhooks() bool {
	if c == nil {
		return false
	}
	for _, t := range c.Tenants {
		if t.WebhooksEnabled() {
			return true
		}
	}
	return false
}
