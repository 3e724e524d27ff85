package admin

import (
	"context"
	"errors"
	"time"

	"mediagen/internal/store"
)

// QueueKind is one kind of job in the queue, as the operator overview shows it.
type QueueKind struct {
	Kind      string
	Running   int // leased now
	Due       int // waiting for a worker
	Scheduled int // due later
	// OldestDue is when the longest-waiting due job became due (zero: none is due).
	OldestDue time.Time
}

// Depth is the jobs not yet run: due and scheduled.
func (q QueueKind) Depth() int { return q.Due + q.Scheduled }

// UpstreamSlots is one upstream account's slots across every replica: the tasks holding one,
// the tasks in line still asking, and the account's max_in_flight (0: no bound).
type UpstreamSlots struct {
	Account     string
	Kind        string
	InFlight    int
	Waiting     int
	MaxInFlight int
}

// JobQueue counts the job queue by kind (viewers and above). It reads the jobs table, which
// holds only unfinished jobs, never the tasks.
func (s *Service) JobQueue(ctx context.Context, a Actor) ([]QueueKind, error) {
	if err := need(a, RoleViewer); err != nil {
		return nil, err
	}
	st, ok := s.st.(store.OverviewStore)
	if !ok {
		return nil, errors.New("job queue: the store has no queue statistics")
	}
	stats, err := st.JobQueueStats(ctx, s.Now())
	if err != nil {
		return nil, err
	}
	out := make([]QueueKind, 0, len(stats))
	for _, q := range stats {
		out = append(out, QueueKind{Kind: q.Kind, Running: q.Running, Due: q.Due, Scheduled: q.Scheduled, OldestDue: utc(q.OldestDue)})
	}
	return out, nil
}

// UpstreamSlotList lists every account of the catalog in force, in its order, with its slots
// as the store counts them; accounts the store counts that the catalog no longer names follow.
func (s *Service) UpstreamSlotList(ctx context.Context, a Actor) ([]UpstreamSlots, error) {
	if err := need(a, RoleViewer); err != nil {
		return nil, err
	}
	st, ok := s.st.(store.OverviewStore)
	if !ok {
		return nil, errors.New("upstream slots: the store has no slot statistics")
	}
	stats, err := st.UpstreamSlotStats(ctx, s.Now())
	if err != nil {
		return nil, err
	}
	counted := make(map[string]store.UpstreamSlotStat, len(stats))
	for _, x := range stats {
		counted[x.Account] = x
	}
	var out []UpstreamSlots
	for _, acc := range s.catalog().Accounts() {
		x := counted[acc.Name]
		delete(counted, acc.Name)
		out = append(out, UpstreamSlots{Account: acc.Name, Kind: string(acc.Kind), InFlight: x.InFlight, Waiting: x.Waiting, MaxInFlight: acc.MaxInFlight})
	}
	for _, x := range stats {
		if _, left := counted[x.Account]; left {
			out = append(out, UpstreamSlots{Account: x.Account, InFlight: x.InFlight, Waiting: x.Waiting})
		}
	}
	return out, nil
}
