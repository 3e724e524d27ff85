package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"mediagen/internal/store"
)

// Group commit for a store with a single writer connection (SQLite).
//
// Without it, every Transact waits for the one write connection in database/sql's pool, which
// hands the connection to a random waiter, and pays a BEGIN, a COMMIT and the WAL frames of
// every page it touched. Under load that made task creation CPU-bound on commits and gave it a
// long random tail. With it, one goroutine owns the writer: it takes every transaction that is
// waiting, runs each inside its own SAVEPOINT of one shared transaction, and commits once. A
// transaction whose fn fails or panics is rolled back to its savepoint alone; the others
// commit. Nobody is told "done" before the COMMIT that made their writes durable has returned,
// so callers see exactly the semantics of a transaction of their own.
//
// A lone transaction on an idle store runs at once, alone. Batches form from transactions
// that arrived while the previous batch was running, and, when the store is busy (a
// transaction arriving within lingerWhenBusy of the previous commit), from those arriving
// during a short linger (lingerFor, the one timer of the loop) that the lone one waits out.
//
// PostgreSQL uses the same machinery in its shared mode (EnableSharedCommits) for one reason
// only: creates of one key or tenant serialise on its counter and balance rows, each holding
// them through its own commit. There only transactions marked by store.ShareCommit are
// grouped, in lanes by tenant, in (tenant, key) order, first without savepoints, and a batch
// that fails as a whole runs its members again alone (docs/runner.md, "Shared commits").

// maxGroup bounds a batch so one commit never holds a long queue of answers back.
const maxGroup = 64

// A transaction that arrives within lingerWhenBusy of the previous commit waits up to
// lingerFor for others to share its commit (see loop).
const (
	lingerWhenBusy = time.Millisecond
	lingerFor      = time.Millisecond
)

type groupJob struct {
	ctx      context.Context
	fn       func(store.Tx) error
	share    store.Share  // PostgreSQL: the tenant and key the transaction locks (store.ShareCommit)
	between  func() error // not a transaction: run by the writer goroutine between two commits (BetweenCommits)
	err      error
	panicked bool
	panicVal any
	done     chan struct{}
}

type grouper struct {
	db *DB
	// lanes: SQLite has one (its single writer); PostgreSQL one per tenant hash, so tenants
	// commit side by side while each tenant's creates share commits.
	lanes  []chan *groupJob
	closed chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	// shared: the PostgreSQL mode. Only transactions marked by store.ShareCommit come here; a
	// batch runs them in (tenant, key) order and, when it fails as a whole before its commit,
	// runs each again alone (which the mark allows).
	shared bool
	// pipe: the shared mode on a driver that can queue statements (pipe.go); nil otherwise.
	pipe Piper
	// postGuarded and moveBalances are postQueued and moveBalancesSQL as the pipe's dialect
	// refuses them (Piper.RequireRows), in its placeholder form.
	postGuarded, moveBalances string
	// holdSpends is holdSpendsSQL as the pipe's dialect refuses it (spend.go).
	holdSpends string

	// batches and grouped count commits and the transactions they carried (for tests and
	// metrics: grouped/batches is the mean batch size).
	mu      sync.Mutex
	batches int64
	grouped int64
	rerun   int64 // members of failed shared transactions run again alone
}

// errClosed is returned by Transact after Close.
var errClosed = errors.New("store closed")

// EnableGroupCommit makes Transact share commits between concurrent callers. Drivers with a
// single writer connection turn it on; it must be called before the DB is used.
func (db *DB) EnableGroupCommit() {
	db.group = startGrouper(db, 1, false)
}

// EnableSharedCommits lets transactions marked by store.ShareCommit share commits with
// concurrent ones of the same lane (PostgreSQL; see store.ShareCommit for the contract).
// Unmarked transactions run alone as before. It must be called before the DB is used.
func (db *DB) EnableSharedCommits(lanes int) {
	db.group = startGrouper(db, max(1, lanes), true)
}

func startGrouper(db *DB, lanes int, shared bool) *grouper {
	g := &grouper{db: db, closed: make(chan struct{}), shared: shared}
	if p, ok := db.d.(Piper); ok && shared {
		g.pipe = p
		g.postGuarded = db.q(p.RequireRows(postQueued, "account update"))
		g.moveBalances = db.q(p.RequireRows(moveBalancesSQL, "balance move"))
		g.holdSpends = db.q(p.RequireRows(holdSpendsSQL, "spend cap"))
	}
	for range lanes {
		ch := make(chan *groupJob)
		g.lanes = append(g.lanes, ch)
		g.wg.Add(1)
		go g.loop(ch)
	}
	return g
}

// BetweenCommits runs f on the writer goroutine while no transaction of this DB is open (SQLite:
// nothing is being written). Without group commit it just runs f.
func (db *DB) BetweenCommits(ctx context.Context, f func() error) error {
	g := db.group
	if g == nil || g.shared {
		return f()
	}
	return g.hand(ctx, g.lanes[0], &groupJob{ctx: ctx, between: f, done: make(chan struct{})})
}

// GroupReruns reports how many members of failed shared transactions were run again alone.
func (db *DB) GroupReruns() int64 {
	if db.group == nil {
		return 0
	}
	db.group.mu.Lock()
	defer db.group.mu.Unlock()
	return db.group.rerun
}

// GroupStats reports how many commits the group committer made and how many transactions they
// carried (both zero without group commit).
func (db *DB) GroupStats() (commits, transactions int64) {
	if db.group == nil {
		return 0, 0
	}
	db.group.mu.Lock()
	defer db.group.mu.Unlock()
	return db.group.batches, db.group.grouped
}

func (g *grouper) stop() {
	g.once.Do(func() { close(g.closed) })
	g.wg.Wait()
}

// transact hands fn to the writer goroutine and waits for its outcome. Once the job has been
// taken it always runs to its end, whatever ctx does: the caller must learn whether its
// writes were committed, and the wait is one batch long.
func (g *grouper) transact(ctx context.Context, fn func(store.Tx) error, share store.Share) error {
	lane := g.lanes[0]
	if len(g.lanes) > 1 {
		lane = g.lanes[fnv32(share.TenantID)%uint32(len(g.lanes))]
	}
	return g.hand(ctx, lane, &groupJob{ctx: ctx, fn: fn, share: share, done: make(chan struct{})})
}

// hand gives j to a lane's writer goroutine, waits for its outcome and re-raises its panic.
func (g *grouper) hand(ctx context.Context, lane chan *groupJob, j *groupJob) error {
	select {
	case lane <- j:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.closed:
		return errClosed
	}
	<-j.done
	if j.panicked {
		panic(j.panicVal)
	}
	return j.err
}

func (g *grouper) loop(jobs chan *groupJob) {
	defer g.wg.Done()
	batch := make([]*groupJob, 0, maxGroup)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var lastRun time.Time
	l := &lane{}
	for {
		select {
		case j := <-jobs:
			batch = append(batch[:0], j)
		case <-g.closed:
			return
		}
		arrived := time.Now()
	more:
		for len(batch) < maxGroup {
			select {
			case j := <-jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		// Under load (this transaction came hard on the heels of the last commit) a lone
		// transaction waits a moment for company: a commit costs about as much as the
		// statements of several transactions, so sharing it is what keeps the writer ahead of
		// a steady stream. An idle store never waits.
		if len(batch) == 1 && arrived.Sub(lastRun) < lingerWhenBusy {
			linger.Reset(lingerFor)
		wait:
			for len(batch) < maxGroup {
				select {
				case j := <-jobs:
					batch = append(batch, j)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop() // since Go 1.23 a stopped timer never delivers a stale tick
		}
		g.run(l, batch)
		lastRun = time.Now()
		clear(batch)
	}
}

// run executes one batch and tells every job its outcome.
// lane is a loop's own state.
type lane struct {
	// careful: the last shared batch had a member that failed, so the next one uses
	// savepoints from the start (runShared).
	careful bool
}

func (g *grouper) run(l *lane, batch []*groupJob) {
	live := batch[:0:0]
	for _, j := range batch {
		if j.between != nil {
			// No transaction of this store is open now: the previous batch has committed and
			// the next has not begun.
			j.panicked, j.panicVal, j.err = callGuarded(j.between)
			close(j.done)
			continue
		}
		// A caller that gave up before its turn is not run at all.
		if err := j.ctx.Err(); err != nil {
			j.err = err
			close(j.done)
			continue
		}
		live = append(live, j)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		if g.pipe == nil || l.careful {
			// Alone: exactly the plain transaction, with the caller's context.
			j := live[0]
			j.panicked, j.panicVal, j.err = callGuarded(func() error { return g.db.transactOnce(j.ctx, j.fn) })
			// A lone transaction is a batch too: once one succeeds, the next is optimistic
			// again (else a lane that met one refusal would stay slow until a crowd came).
			l.careful = j.err != nil || j.panicked
			close(j.done)
			g.count(1)
			return
		}
		// Pipelined, a lone create costs three round trips instead of seven (pipe.go).
	}
	if g.shared {
		// Every batch takes its rows in the same order (store.ShareCommit).
		sort.SliceStable(live, func(a, b int) bool {
			if live[a].share.TenantID != live[b].share.TenantID {
				return live[a].share.TenantID < live[b].share.TenantID
			}
			return live[a].share.KeyID < live[b].share.KeyID
		})
	}
	var again []*groupJob
	if g.shared && !l.careful {
		// Optimistic: one statement fewer on each side of every member. A member that fails
		// sends the batch back, to run with savepoints.
		again = g.runShared(live, false)
		l.careful = len(again) > 0
		if l.careful {
			for _, j := range again {
				j.err, j.panicked, j.panicVal = nil, false, nil
			}
			again = g.runShared(live, true)
		}
	} else {
		again = g.runShared(live, true)
		if g.shared {
			l.careful = anyFailed(live)
		}
	}
	if len(again) > 0 {
		// The shared transaction failed before its commit, so nothing of it was written:
		// each member runs again alone, exactly as an unshared transaction would.
		g.mu.Lock()
		g.rerun += int64(len(again))
		g.mu.Unlock()
		for _, j := range again {
			j.panicked, j.panicVal, j.err = callGuarded(func() error { return g.db.transactOnce(j.ctx, j.fn) })
			close(j.done)
		}
	}
	g.count(len(live))
}

func (g *grouper) count(n int) {
	g.mu.Lock()
	g.batches++
	g.grouped += int64(n)
	g.mu.Unlock()
}

func anyFailed(jobs []*groupJob) bool {
	for _, j := range jobs {
		if j.err != nil || j.panicked {
			return true
		}
	}
	return false
}

// runShared runs several jobs in one transaction, each under its own savepoint. In the
// shared (PostgreSQL) mode a failure of the whole transaction before its commit returns the
// jobs, untold, for runShared's caller to run again (alone, or with savepoints); otherwise
// every job is told.
//
// Without savepoints (shared mode only), the first member that fails or panics ends the
// attempt: its partial writes cannot be undone alone, so everything is rolled back and the
// jobs are returned.
func (g *grouper) runShared(jobs []*groupJob, savepoints bool) (again []*groupJob) {
	db := g.db
	if g.pipe != nil {
		if !db.piped(g.pipe, func(st sharedTxn) { again = g.runIn(st, jobs, savepoints) }) {
			// No connection: nothing ran, so each job runs again alone (and meets the error).
			return g.untold(jobs)
		}
		return again
	}
	// Statements run detached from the callers' contexts: a cancelled context interrupts the
	// running statement, and SQLite answers an interrupted write inside an explicit
	// transaction by rolling the whole transaction back — everyone else's work with it.
	tx, err := db.write.BeginTx(context.Background(), nil)
	if err != nil {
		if g.shared {
			return g.untold(jobs)
		}
		for _, j := range jobs {
			j.err = fmt.Errorf("begin: %w", err)
			close(j.done)
		}
		return nil
	}
	return g.runIn(sqlTxn{db: db, tx: tx}, jobs, savepoints)
}

// untold clears the jobs' outcomes and returns them, to run again.
func (g *grouper) untold(jobs []*groupJob) []*groupJob {
	for _, j := range jobs {
		j.err, j.panicked, j.panicVal = nil, false, nil
	}
	return jobs
}

// runIn is runShared inside its open transaction.
func (g *grouper) runIn(st sharedTxn, jobs []*groupJob, savepoints bool) (again []*groupJob) {
	db := g.db
	finish := func(batchErr error) {
		for _, j := range jobs {
			if batchErr != nil && j.err == nil && !j.panicked {
				j.err = batchErr
			}
			close(j.done)
		}
	}
	// abort ends a transaction that failed before its commit.
	abort := func(err error) []*groupJob {
		st.rollback()
		if g.shared {
			return g.untold(jobs)
		}
		finish(err)
		return nil
	}
	bg := context.Background()
	// Savepoint statements go through the write-statement cache like any other.
	ctl := st.member(false)
	txs := make([]*Tx, 0, len(jobs))
	for _, j := range jobs {
		if savepoints {
			if _, err := ctl.exec(bg, "SAVEPOINT g"); err != nil {
				return abort(fmt.Errorf("savepoint: %w", err))
			}
		}
		// Without savepoints a member's statements may be queued (pipe.go): any failure sends
		// the batch back, to run with savepoints, where nothing is queued.
		jt := st.member(!savepoints)
		txs = append(txs, jt)
		j.panicked, j.panicVal, j.err = callGuarded(func() error { return j.fn(jt) })
		if g.shared && j.err != nil && db.d.IsRetryable(j.err) {
			// A deadlock or serialization failure is the batch's, not this job's: alone, the
			// job would have waited instead.
			return abort(j.err)
		}
		if !savepoints {
			if j.err != nil || j.panicked {
				st.rollback()
				return jobs
			}
			continue
		}
		if j.err != nil || j.panicked {
			// Undo this job alone. If SQLite already rolled the whole transaction back (it does
			// so on some I/O and memory errors), the savepoint is gone and so is everyone's work.
			if _, err := ctl.exec(bg, "ROLLBACK TO g"); err != nil {
				return abort(fmt.Errorf("rollback to savepoint: %w", err))
			}
		}
		if _, err := ctl.exec(bg, "RELEASE g"); err != nil {
			return abort(fmt.Errorf("release savepoint: %w", err))
		}
	}
	db.beforeCommit(txs...)
	queued, err := st.commit()
	db.afterCommit(txs...)
	if queued != nil {
		// A statement some member queued failed (it went just before the COMMIT, which then never
		// ran): the batch runs again with savepoints, or, if the failure was the batch's (a
		// deadlock), each member alone.
		if db.d.IsRetryable(queued) {
			return abort(queued)
		}
		st.rollback()
		return jobs
	}
	if err != nil {
		// Whether a failed COMMIT wrote anything is unknown (the connection may have died
		// after the server committed): running the jobs again could do them twice, so they
		// get the error, as a lone transaction's caller would.
		finish(fmt.Errorf("commit: %w", err))
		return nil
	}
	db.preparePending(bg)
	for i, j := range jobs {
		if j.err == nil && !j.panicked {
			db.spendRows.committed(txs[i])
		}
	}
	finish(nil)
	return nil
}

// fnv32 is FNV-1a: cheap, and spreads ids over cache shards and tenant ids over lanes well enough.
func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// callGuarded runs f and turns a panic into a value the caller's goroutine re-raises.
func callGuarded(f func() error) (panicked bool, val any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicked, val, err = true, p, nil
		}
	}()
	return false, nil, f()
}

// stmtCtx is the context a statement inside the transaction runs with.
func (t *Tx) stmtCtx(ctx context.Context) context.Context {
	if t.detached {
		return context.WithoutCancel(ctx)
	}
	return ctx
}
