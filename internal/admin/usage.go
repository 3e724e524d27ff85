package admin

import (
	"context"
	"time"

	"mediagen/internal/apierr"

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
	// From and To are the days rebuilt, [From, To) ("" for a rebuild of everything).
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// RebuildUsageRange is RebuildUsage for the whole UTC days [from, to) alone: after a repair
// of some days' records it rewrites those days' rollups, not every report's (owners only,
// audited as usage.rebuild with the range).
func (s *Service) RebuildUsageRange(ctx context.Context, a Actor, from, to time.Time) (UsageRebuilt, error) {
	if err := need(a, RoleOwner); err != nil {
		return UsageRebuilt{}, err
	}
	if !from.Equal(from.UTC().Truncate(24*time.Hour)) || !to.Equal(to.UTC().Truncate(24*time.Hour)) {
		return UsageRebuilt{}, apierr.Invalid("from", "A rebuild takes whole UTC days: from and to are dates.")
	}
	if !to.After(from) {
		return UsageRebuilt{}, apierr.Invalid("to", "to must be after from.")
	}
	return write(ctx, s, a, func(tx store.Tx) (UsageRebuilt, Change, error) {
		if err := tx.RebuildUsageRange(ctx, from, to); err != nil {
			return UsageRebuilt{}, Change{}, err
		}
		out := UsageRebuilt{Object: "usage.rebuild", From: from.UTC().Format(time.DateOnly), To: to.UTC().Format(time.DateOnly)}
		return out, Change{Action: "usage.rebuild", TargetType: "usage", TargetID: "rollups", After: out}, nil
	})
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
