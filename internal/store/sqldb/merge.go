package sqldb

import (
	"context"
	"math/bits"
	"sort"
	"strings"

	"mediagen/internal/store"
)

// Merged writes (PostgreSQL shared commits).
//
// Queued statements cost no round trip, but each still costs the server a statement: bind,
// executor start and end, a snapshot. Those fixed costs, seven statements per create, were most
// of what a batch held its tenant's counter row for. So in an optimistic shared batch the
// members' writes are merged, per table, into statements sent with the COMMIT:
//
//   - inserts into one table become one multi-row INSERT (in power-of-two chunks);
//   - in-flight increments become one upsert of each counter row, by the batch's total;
//   - the balance moves of Posts within one key become one UPDATE of each account, by its net
//     amount, guarded by the sum of its debits.
//
// That is safe because a transaction marked by store.ShareCommit reads none of the rows it
// inserts and no balance it moves before its commit; the in-flight counts are the exception,
// and a member that reads them (inFlight) sends the increments made so far first.
//
// The merged guard is conservative: if an account's balance covers the sum of the batch's
// debits before any of its credits, it covers every member's debit in any order, so the batch
// passes only where every member alone would have. Where it does not, the server refuses the
// update (Piper.RequireRows), the batch fails, and its second run, with savepoints, moves each
// balance member by member and tells each member its own outcome.
//
// The row locks keep their order: the counter upsert is sent first (tenant, then key: the
// members are sorted by tenant and key, and each adds its tenant before its key), then the
// inserts, then the spend counters of capped reservations (spend.go), by the batch's total for
// each, guarded by the cap, then the accounts.

// merged holds an optimistic shared batch's writes until they are sent.
type merged struct {
	// inserts per statement head, in the order first made (a later table may reference an
	// earlier one).
	inserts []*pendingInsert
	// counts: in-flight increments not sent yet, per counter row in first-added order;
	// answered: each counter row's value as its last sent upsert returned it.
	counts   []countDelta
	answered map[counterRow]int64
	// moves: net balance moves per account, in first-added order.
	moves []*accountMove
	// spends: spend counter growths (spend.go), per counter, sent before the moves; refs: the
	// holds' refs, which a new counter's seed leaves out.
	spends []*spendDelta
	refs   []string
}

type spendDelta struct {
	store.CappedCounter
	total int64
}

type pendingInsert struct {
	head, tail string
	cols       int
	args       []any
}

type counterRow struct{ kind, owner string }

type countDelta struct {
	row counterRow
	n   int64
}

type accountMove struct {
	account string
	net     int64 // sum of every member's amount
	debits  int64 // sum of the negative amounts alone (≤ 0)
	at      int64 // updated_at: the last Post's time
}

// insert inserts rows of width cols (args holds them one after another): `head VALUES (…),
// (…) tail`. In an optimistic shared batch the rows wait for the commit (see above).
func (t *Tx) insert(ctx context.Context, head, tail string, cols int, args []any) error {
	if t.merge != nil {
		t.merge.insert(head, tail, cols, args)
		return nil
	}
	return t.later(ctx, head+valuesList(cols, len(args)/cols)+tail, args, nil)
}

// valuesList is " VALUES (?, …), …" for rows of width cols.
func valuesList(cols, rows int) string {
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return " VALUES " + row + strings.Repeat(", "+row, rows-1)
}

func (m *merged) insert(head, tail string, cols int, args []any) {
	for _, p := range m.inserts {
		if p.head == head && p.tail == tail {
			p.args = append(p.args, args...)
			return
		}
	}
	m.inserts = append(m.inserts, &pendingInsert{head: head, tail: tail, cols: cols, args: append([]any(nil), args...)})
}

// count adds n to a counter row.
func (m *merged) count(kind, owner string, n int64) {
	row := counterRow{kind, owner}
	for i := range m.counts {
		if m.counts[i].row == row {
			m.counts[i].n += n
			return
		}
	}
	m.counts = append(m.counts, countDelta{row, n})
}

// move adds a Post's amount on an account made at micros at.
func (m *merged) move(account string, amount, at int64) {
	var mv *accountMove
	for _, x := range m.moves {
		if x.account == account {
			mv = x
			break
		}
	}
	if mv == nil {
		mv = &accountMove{account: account}
		m.moves = append(m.moves, mv)
	}
	mv.net += amount
	if amount < 0 {
		mv.debits += amount
	}
	mv.at = max(mv.at, at)
}

// hold adds a capped reservation's amount to its counter; the tightest cap a member gave
// guards the sum.
func (m *merged) hold(c store.CappedCounter, amount int64, ref string) {
	if len(m.refs) == 0 || m.refs[len(m.refs)-1] != ref {
		m.refs = append(m.refs, ref)
	}
	for _, d := range m.spends {
		if d.Same(c.SpendCounter) {
			d.total += amount
			d.Cap = min(d.Cap, c.Cap)
			return
		}
	}
	m.spends = append(m.spends, &spendDelta{CappedCounter: c, total: amount})
}

// addInFlightSQL upserts counter rows by arrays of kinds, owners and increments (one row each).
const addInFlightSQL = `INSERT INTO in_flight (kind, owner, n)
	SELECT * FROM unnest(?::text[], ?::text[], ?::bigint[])
	ON CONFLICT (kind, owner) DO UPDATE SET n = in_flight.n + EXCLUDED.n
	RETURNING kind, owner, n`

// moveBalancesSQL moves accounts by arrays of ids, net amounts, debits and times, each only if
// its guard passes; wrapped by Piper.RequireRows, the server refuses unless every account moved.
// The ceiling (postUpdate) is guarded as conservatively as the funds: the debits alone and the
// credits alone must each keep the balance within it.
var moveBalancesSQL = `UPDATE accounts a SET balance = a.balance + v.net, updated_at = v.at
	FROM unnest(?::text[], ?::bigint[], ?::bigint[], ?::bigint[]) AS v(id, net, debits, at)
	WHERE a.id = v.id AND (a.allow_negative <> 0 OR a.balance + v.debits >= 0)
	AND a.balance + v.debits >= -(` + ceilingSQL("a.kind") + `)
	AND a.balance + (v.net - v.debits) <= ` + ceilingSQL("a.kind") + `
	RETURNING 1`

// queueCounts queues the pending in-flight increments; their answers go to m.answered.
func (m *merged) queueCounts(p Pipe, rebind func(string) string) {
	if len(m.counts) == 0 {
		return
	}
	kinds, owners, ns := make([]string, len(m.counts)), make([]string, len(m.counts)), make([]int64, len(m.counts))
	for i, c := range m.counts {
		kinds[i], owners[i], ns[i] = c.row.kind, c.row.owner, c.n
	}
	m.counts = m.counts[:0]
	p.QueueRead(rebind(addInFlightSQL), []any{kinds, owners, ns}, func(rows Rows) error {
		if m.answered == nil {
			m.answered = map[counterRow]int64{}
		}
		for rows.Next() {
			var r counterRow
			var n int64
			if err := rows.Scan(&r.kind, &r.owner, &n); err != nil {
				return err
			}
			m.answered[r] = n
		}
		return rows.Err()
	})
}

// queue queues everything the batch holds back, for its commit (see above for the order).
// Inserts go in chunks of powers of two rows (13 rows: 8, 4 and 1), so each has a handful of
// statement texts for the driver's statement cache instead of one per batch size.
func (m *merged) queue(p Pipe, rebind func(string) string, moveBalances, holdSpends string) {
	m.queueCounts(p, rebind)
	for _, in := range m.inserts {
		rows := len(in.args) / in.cols
		at := 0
		for rows > 0 {
			n := 1 << (bits.Len(uint(rows)) - 1)
			end := at + n*in.cols
			p.Queue(rebind(in.head+valuesList(in.cols, n)+in.tail), in.args[at:end], nil)
			at, rows = end, rows-n
		}
	}
	m.inserts = nil
	if len(m.spends) > 0 {
		// Tenant counters before key counters, and all before the accounts, as every hold and
		// settlement locks them (spend.go).
		sort.SliceStable(m.spends, func(i, j int) bool { return holdLess(m.spends[i].CappedCounter, m.spends[j].CappedCounter) })
		n := len(m.spends)
		scopes, owners, periods, totals, caps := make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([]int64, n)
		froms, untils := make([]int64, n), make([]int64, n)
		seed := false
		for i, d := range m.spends {
			scopes[i], owners[i], periods[i], totals[i], caps[i] = d.Scope, d.Owner, d.Period, d.total, int64(d.Cap)
			if !d.From.IsZero() && d.From.Before(d.Until) {
				froms[i], untils[i], seed = micros(d.From), micros(d.Until), true
			}
		}
		if seed {
			// Missing rows first, seeded with what their period spent before a cap counted it,
			// the open records given holds on them (spendseed.go). Counters whose rows are known
			// to exist came without bounds: a batch with only those sends neither.
			p.Queue(rebind(holdOpenSpendsSQL), []any{scopes, owners, periods, froms, untils}, nil)
			p.Queue(rebind(seedSpendsSQL), []any{m.refs, m.refs, scopes, owners, periods, caps, froms, untils}, nil)
		}
		m.refs = nil
		p.QueueRead(holdSpends, []any{scopes, owners, periods, totals, caps, int64(n)}, nil)
		m.spends = nil
	}
	if len(m.moves) > 0 {
		n := len(m.moves)
		ids, nets, debits, ats := make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n)
		for i, mv := range m.moves {
			ids[i], nets[i], debits[i], ats[i] = mv.account, mv.net, mv.debits, mv.at
		}
		p.QueueRead(moveBalances, []any{ids, nets, debits, ats, int64(n)}, nil)
		m.moves = nil
	}
}
