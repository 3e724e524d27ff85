package store

import "context"

// ShareCommit marks the transaction Transact is about to run with ctx as one that may share
// its commit with concurrent transactions of other requests (PostgreSQL group commit: one
// busy key or tenant otherwise gets about one create per WAL flush, because each create holds
// the tenant's and the key's counter and balance rows until its commit).
//
// By marking it the caller promises two things. The transaction locks rows of this tenant and
// key only, in the order every transaction uses (tenant in-flight counter, key in-flight
// counter, then the spend counters of a capped reservation, tenant's then key's, then the key's
// accounts), which lets the store run a batch's transactions in
// (tenant, key) order without deadlocking other replicas' batches. And fn may run more than
// once: when a shared transaction fails as a whole before its commit (a deadlock the database
// broke, a lost connection) the store runs each of its members again alone. Its effects outside
// the transaction must therefore be repeatable. And fn reads none of the rows it inserts and no
// balance it moves: the store may hold its inserts and balance moves back until the commit,
// merged with the other members' (PostgreSQL).
// Each member still gets exactly its own outcome: committed with the others, or rolled back alone.
func ShareCommit(ctx context.Context, tenantID, keyID string) context.Context {
	return context.WithValue(ctx, shareKey{}, Share{TenantID: tenantID, KeyID: keyID})
}

// Share is what ShareCommit attached.
type Share struct{ TenantID, KeyID string }

type shareKey struct{}

// SharedCommit returns what ShareCommit attached to ctx.
func SharedCommit(ctx context.Context) (Share, bool) {
	s, ok := ctx.Value(shareKey{}).(Share)
	return s, ok
}
