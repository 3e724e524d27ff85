package sqldb

import (
	"context"
	"errors"
	"fmt"
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
// There is no timer: a lone transaction runs at once, alone, as before. Batches form only from
// transactions that arrived while the previous batch was running.

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
	err      error
	panicked bool
	panicVal any
	done     chan struct{}
}

type grouper struct {
	db     *DB
	jobs   chan *groupJob
	closed chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	// batches and grouped count commits and the transactions they carried (for tests and
	// metrics: grouped/batches is the mean batch size).
	mu      sync.Mutex
	batches int64
	grouped int64
}

// errClosed is returned by Transact after Close.
var errClosed = errors.New("store closed")

// EnableGroupCommit makes Transact share commits between concurrent callers. Drivers with a
// single writer connection turn it on; it must be called before the DB is used.
func (db *DB) EnableGroupCommit() {
	g := &grouper{db: db, jobs: make(chan *groupJob), closed: make(chan struct{})}
	g.wg.Add(1)
	go g.loop()
	db.group = g
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
func (g *grouper) transact(ctx context.Context, fn func(store.Tx) error) error {
	j := &groupJob{ctx: ctx, fn: fn, done: make(chan struct{})}
	select {
	case g.jobs <- j:
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

func (g *grouper) loop() {
	defer g.wg.Done()
	batch := make([]*groupJob, 0, maxGroup)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	var lastRun time.Time
	for {
		select {
		case j := <-g.jobs:
			batch = append(batch[:0], j)
		case <-g.closed:
			return
		}
		arrived := time.Now()
	more:
		for len(batch) < maxGroup {
			select {
			case j := <-g.jobs:
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
				case j := <-g.jobs:
					batch = append(batch, j)
				case <-linger.C:
					break wait
				}
			}
			linger.Stop() // since Go 1.23 a stopped timer never delivers a stale tick
		}
		g.run(batch)
		lastRun = time.Now()
		clear(batch)
	}
}

// run executes one batch and tells every job its outcome.
func (g *grouper) run(batch []*groupJob) {
	live := batch[:0:0]
	for _, j := range batch {
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
		// Alone: exactly the plain transaction, with the caller's context.
		j := live[0]
		j.panicked, j.panicVal, j.err = callGuarded(func() error { return g.db.transactOnce(j.ctx, j.fn) })
		close(j.done)
		g.count(1)
		return
	}
	g.runShared(live)
	g.count(len(live))
}

func (g *grouper) count(n int) {
	g.mu.Lock()
	g.batches++
	g.grouped += int64(n)
	g.mu.Unlock()
}

// runShared runs several jobs in one transaction, each under its own savepoint.
func (g *grouper) runShared(jobs []*groupJob) {
	db := g.db
	finish := func(batchErr error) {
		for _, j := range jobs {
			if batchErr != nil && j.err == nil && !j.panicked {
				j.err = batchErr
			}
			close(j.done)
		}
	}
	// Statements run detached from the callers' contexts: a cancelled context interrupts the
	// running statement, and SQLite answers an interrupted write inside an explicit
	// transaction by rolling the whole transaction back — everyone else's work with it.
	bg := context.Background()
	tx, err := db.write.BeginTx(bg, nil)
	if err != nil {
		finish(fmt.Errorf("begin: %w", err))
		return
	}
	// Savepoint statements go through the write-statement cache like any other.
	ctl := &Tx{db: db, tx: tx, detached: true}
	txs := make([]*Tx, 0, len(jobs))
	for _, j := range jobs {
		if _, err := ctl.exec(bg, "SAVEPOINT g"); err != nil {
			_ = tx.Rollback()
			finish(fmt.Errorf("savepoint: %w", err))
			return
		}
		jt := &Tx{db: db, tx: tx, detached: true}
		txs = append(txs, jt)
		j.panicked, j.panicVal, j.err = callGuarded(func() error { return j.fn(jt) })
		if j.err != nil || j.panicked {
			// Undo this job alone. If SQLite already rolled the whole transaction back (it does
			// so on some I/O and memory errors), the savepoint is gone and so is everyone's work.
			if _, err := ctl.exec(bg, "ROLLBACK TO g"); err != nil {
				_ = tx.Rollback()
				finish(fmt.Errorf("rollback to savepoint: %w", err))
				return
			}
		}
		if _, err := ctl.exec(bg, "RELEASE g"); err != nil {
			_ = tx.Rollback()
			finish(fmt.Errorf("release savepoint: %w", err))
			return
		}
	}
	db.beforeCommit(txs...)
	err = tx.Commit()
	db.afterCommit(txs...)
	if err != nil {
		finish(fmt.Errorf("commit: %w", err))
		return
	}
	db.preparePending(bg)
	finish(nil)
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
