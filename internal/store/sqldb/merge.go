package sqldb

import (
	"context"
	"math/bits"
	"strings"
)

// Merged inserts (PostgreSQL shared commits).
//
// Queued statements cost no round trip, but each still costs the server a statement: parse
// check, executor start and end. Those fixed costs, four inserts per create, were most of what
// one create held its tenant's counter row for. So in an optimistic shared batch the inserts of
// all members into one table go into one multi-row INSERT, sent just before the COMMIT. That is safe
// because a transaction marked by store.ShareCommit reads none of the rows it inserts before
// its commit; a failed merged insert (a duplicate client_request_id) fails the batch, whose run
// with savepoints inserts row by row and tells the member that made the duplicate.

// insert inserts rows of width cols (args holds them one after another): `head VALUES (…),
// (…) tail`. In an optimistic shared batch the rows wait for the commit (see above).
func (t *Tx) insert(ctx context.Context, head, tail string, cols int, args []any) error {
	if t.merge != nil {
		t.merge.add(head, tail, cols, args)
		return nil
	}
	return t.later(ctx, head+valuesList(cols, len(args)/cols)+tail, args, nil)
}

// valuesList is " VALUES (?, …), …" for rows of width cols.
func valuesList(cols, rows int) string {
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return " VALUES " + row + strings.Repeat(", "+row, rows-1)
}

// inserts holds an optimistic shared batch's rows per insert, in the order the inserts were
// first made (a later table may reference an earlier one).
type inserts struct {
	order []*pendingInsert
}

type pendingInsert struct {
	head, tail string
	cols       int
	args       []any
}

func (m *inserts) add(head, tail string, cols int, args []any) {
	for _, p := range m.order {
		if p.head == head && p.tail == tail {
			p.args = append(p.args, args...)
			return
		}
	}
	m.order = append(m.order, &pendingInsert{head: head, tail: tail, cols: cols, args: append([]any(nil), args...)})
}

// queue queues the merged inserts on p. Rows go in chunks of powers of two (13 rows: 8, 4 and
// 1), so each insert has a handful of statement texts for the driver's statement cache instead
// of one per batch size.
func (m *inserts) queue(p Pipe, rebind func(string) string) {
	for _, in := range m.order {
		rows := len(in.args) / in.cols
		at := 0
		for rows > 0 {
			n := 1 << (bits.Len(uint(rows)) - 1)
			end := at + n*in.cols
			p.Queue(rebind(in.head+valuesList(in.cols, n)+in.tail), in.args[at:end], nil)
			at, rows = end, rows-n
		}
	}
	m.order = nil
}
