package store

import (
	"context"
	"time"
)

// JobQueueStat is the queue of one kind of job: how many are leased, due (waiting for a
// worker) and scheduled later, and since when the oldest due one has been waiting.
type JobQueueStat struct {
	Kind                    string
	Running, Due, Scheduled int
	OldestDue               time.Time // the run_at of the longest-waiting due job; zero when none is due
}

// UpstreamSlotStat is one upstream account's slots as the store counts them across every
// process: the tasks holding a slot now, and the tasks in its line still asking for one.
type UpstreamSlotStat struct {
	Account  string
	InFlight int
	Waiting  int
}

// OverviewStore is what the operator console's overview reads: small tables, not tasks.
type OverviewStore interface {
	// JobQueueStats counts the jobs table by kind at now (finished jobs are deleted, so it
	// holds only the backlog), with the oldest due job's run_at.
	JobQueueStats(ctx context.Context, now time.Time) ([]JobQueueStat, error)
	// UpstreamSlotStats lists every upstream account with a slot row or a task in line, by
	// account: slots held, and tasks in line still asking at now.
	UpstreamSlotStats(ctx context.Context, now time.Time) ([]UpstreamSlotStat, error)
}
