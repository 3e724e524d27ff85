package admin

import (
	"context"

	"mediagen/internal/store"
	"mediagen/internal/usage"
)

// Usage answers a usage, revenue and cost report from the rollups every settlement keeps
// (internal/usage): for viewers and above. Grouped by key, the rows carry the keys' names.
func (s *Service) Usage(ctx context.Context, a Actor, q usage.Query) (usage.Report, error) {
	if err := need(a, RoleViewer); err != nil {
		return usage.Report{}, err
	}
	q.Cost = true // the operator's report: with the cost and margin
	return usage.Run(ctx, s.st, q, func(ctx context.Context) (map[string]string, error) {
		list, err := s.st.Keys(ctx, "")
		if err != nil {
			return nil, err
		}
		names := make(map[string]string, len(list))
		for _, k := range list {
			names[k.ID] = k.Name
		}
		return names, nil
	})
}

// UsageRebuilt is the answer of a rebuild.
type UsageRebuilt struct {
	Object string `json:"object"` // "usage.rebuild"
}

// RebuildUsage recomputes the usage rollups from the settled tasks and speech records (the
// usage migration's backfill), idempotently, with its audit entry in the same transaction.
// Owners only: it rewrites every report's source, though never a figure the ledger disagrees
// with.
func (s *Service) RebuildUsage(ctx context.Context, a Actor) (UsageRebuilt, error) {
	if err := need(a, RoleOwner); err != nil {
		return UsageRebuilt{}, err
	}
	return write(ctx, s, a, func(tx store.Tx) (UsageRebuilt, Change, error) {
		if err := tx.RebuildUsage(ctx); err != nil {
			return UsageRebuilt{}, Change{}, err
		}
		out := UsageRebuilt{Object: "usage.rebuild"}
		return out, Change{Action: "usage.rebuild", TargetType: "usage", TargetID: "rollups", After: out}, nil
	})
}
