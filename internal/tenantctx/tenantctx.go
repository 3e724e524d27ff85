// Package tenantctx carries whose work a context is doing — the tenant and the API key — to
// the shared resources that serve tenants fairly, such as the process-wide budget of media
// processes (internal/media/budget). The job engine sets it for every run from the job's row;
// request paths set it from the record they work on. It is a leaf: it knows no tenant type.
package tenantctx

import "context"

type ctxKey struct{}

type owner struct{ tenant, key string }

// With returns ctx doing the work of tenant's key. Operator work (a sweep, a check) has no
// tenant: leave both empty, and it is served as one more tenant.
func With(ctx context.Context, tenant, key string) context.Context {
	return context.WithValue(ctx, ctxKey{}, owner{tenant, key})
}

// From returns what With attached, or two empty strings.
func From(ctx context.Context) (tenant, key string) {
	o, _ := ctx.Value(ctxKey{}).(owner)
	return o.tenant, o.key
}
