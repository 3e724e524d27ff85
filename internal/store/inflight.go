package store

import "context"

// InFlightKind names a kind of unfinished work counted per key and per tenant: the kind is
// data, so one count (InFlightTx.InFlight) and one admission (limits.Admit) serve every kind.
// The value prefixes the counter rows' kind in the in_flight table (migration 0006).
type InFlightKind string

// The kinds of work counted in flight, and what moves each count.
const (
	// InFlightTasks counts video tasks queued or in progress: moved by CreateTask and the
	// terminal AdvanceTask.
	InFlightTasks InFlightKind = "task"
	// InFlightSpeeches counts pending speech records: moved by CreateSpeech and FinishSpeech.
	InFlightSpeeches InFlightKind = "speech"
	// InFlightAssets counts Processing assets (ingestions): moved by CreateAsset, FinishAsset
	// and DeleteAsset.
	InFlightAssets InFlightKind = "asset"
)

// InFlightKinds lists every kind, for whatever is kept per kind (limits, tests).
var InFlightKinds = []InFlightKind{InFlightTasks, InFlightSpeeches, InFlightAssets}

// InFlight is how much unfinished work of one kind a key and its tenant have.
type InFlight struct {
	Key, Tenant int
}

// InFlightTx is the part of Tx that reads the in-flight counts.
type InFlightTx interface {
	// InFlight counts the unfinished work of a kind of a key and of a tenant. After a create
	// of that kind in this transaction the counts include it, and on PostgreSQL the counter
	// rows stay locked by this transaction, so concurrent creates of the key or tenant on any
	// replica wait and then see it.
	InFlight(ctx context.Context, kind InFlightKind, keyID, tenantID string) (InFlight, error)
}
