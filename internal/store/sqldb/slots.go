package sqldb

import (
	"cmp"
	"context"
	"fmt"

	"mediagen/internal/store"
)

// An upstream account's slots (its max_in_flight) are counted in in_flight (kind 'upstream');
// upstream_holds counts them per tenant and key, and upstream_waits is the line of tasks
// refused a slot. A freed slot goes to the first in line: the task whose tenant holds the
// fewest of the account's slots, then whose key holds the fewest, then the one waiting
// longest (docs/architecture.md#priority-and-fair-share). A task in line that stops asking
// leaves it after its WaitFor.

// waiter is a task in an account's line, with what its place depends on.
type waiter struct {
	task                string
	since               int64
	tenantHeld, keyHeld int
}

// before orders the line.
func (w waiter) before(o waiter) bool {
	if c := cmp.Or(cmp.Compare(w.tenantHeld, o.tenantHeld), cmp.Compare(w.keyHeld, o.keyHeld), cmp.Compare(w.since, o.since)); c != 0 {
		return c < 0
	}
	return w.task < o.task
}

// slotLineQuery reads an account's line, every task still asking, with the slots its tenant
// and its key hold. The line is as long as the account's waiting tasks: bounded by the tasks
// in flight.
const slotLineQuery = `SELECT w.task_id, w.since, COALESCE(th.n, 0), COALESCE(kh.n, 0) FROM upstream_waits w
	LEFT JOIN (SELECT tenant_id, SUM(n) AS n FROM upstream_holds WHERE account = ? GROUP BY tenant_id) th ON th.tenant_id = w.tenant_id
	LEFT JOIN upstream_holds kh ON kh.account = w.account AND kh.tenant_id = w.tenant_id AND kh.key_id = w.key_id
	WHERE w.account = ? AND w.seen_until >= ?`

// TakeSlot takes a slot of the account for the task if one is free and nobody before it in
// line is waiting for it; otherwise it puts the task in line (keeping its place).
func (t *Tx) TakeSlot(ctx context.Context, st store.SlotTaker) (bool, error) {
	acct := st.Account
	wrap := func(err error) (bool, error) { return false, fmt.Errorf("upstream slot of %s: %w", acct, err) }
	if _, err := t.exec(ctx, `INSERT INTO in_flight (kind, owner, n) VALUES ('upstream', ?, 0) ON CONFLICT (kind, owner) DO NOTHING`, acct); err != nil {
		return wrap(err)
	}
	var held int
	if err := t.queryRow(ctx, `SELECT n FROM in_flight WHERE kind = 'upstream' AND owner = ?`, acct).Scan(&held); err != nil {
		return wrap(err)
	}
	now := micros(st.Now)
	free := st.Limit - held
	if free > 0 {
		ahead, err := t.aheadInLine(ctx, st, now)
		if err != nil {
			return wrap(err)
		}
		free -= ahead
	}
	if free <= 0 {
		return false, t.waitInLine(ctx, st, now)
	}
	// A compare-and-set: replicas taking at once never overshoot the limit together.
	res, err := t.exec(ctx, `UPDATE in_flight SET n = n + 1 WHERE kind = 'upstream' AND owner = ? AND n < ?`, acct, st.Limit)
	if err != nil {
		return wrap(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return false, t.waitInLine(ctx, st, now)
	}
	if _, err := t.exec(ctx, `INSERT INTO upstream_holds (account, tenant_id, key_id, n) VALUES (?, ?, ?, 1)
		ON CONFLICT (account, tenant_id, key_id) DO UPDATE SET n = upstream_holds.n + 1`, acct, st.TenantID, st.KeyID); err != nil {
		return wrap(err)
	}
	if _, err := t.exec(ctx, `DELETE FROM upstream_waits WHERE task_id = ?`, st.TaskID); err != nil {
		return wrap(err)
	}
	return true, nil
}

// aheadInLine counts the tasks still asking for the account's slots that come before this
// one, dropping from the line those that stopped asking.
func (t *Tx) aheadInLine(ctx context.Context, st store.SlotTaker, now int64) (int, error) {
	if _, err := t.exec(ctx, `DELETE FROM upstream_waits WHERE account = ? AND seen_until < ?`, st.Account, now); err != nil {
		return 0, err
	}
	var line []waiter
	err := t.query(ctx, slotLineQuery, []any{st.Account, st.Account, now}, func(rows Rows) error {
		for rows.Next() {
			var w waiter
			if err := rows.Scan(&w.task, &w.since, &w.tenantHeld, &w.keyHeld); err != nil {
				return err
			}
			line = append(line, w)
		}
		return nil
	})
	if err != nil || len(line) == 0 {
		return 0, err
	}
	me := waiter{task: st.TaskID, since: now}
	if err := t.queryRow(ctx, `SELECT COALESCE(SUM(n), 0), COALESCE(SUM(CASE WHEN key_id = ? THEN n ELSE 0 END), 0)
		FROM upstream_holds WHERE account = ? AND tenant_id = ?`, st.KeyID, st.Account, st.TenantID).Scan(&me.tenantHeld, &me.keyHeld); err != nil {
		return 0, err
	}
	for _, w := range line {
		if w.task == st.TaskID {
			me.since = w.since
		}
	}
	ahead := 0
	for _, w := range line {
		if w.task != st.TaskID && w.before(me) {
			ahead++
		}
	}
	return ahead, nil
}

// waitInLine puts the task in its account's line, or keeps its place there until WaitFor.
func (t *Tx) waitInLine(ctx context.Context, st store.SlotTaker, now int64) error {
	until := micros(st.Now.Add(st.WaitFor))
	if _, err := t.exec(ctx, `INSERT INTO upstream_waits (task_id, account, tenant_id, key_id, since, seen_until) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (task_id) DO UPDATE SET seen_until = excluded.seen_until`, st.TaskID, st.Account, st.TenantID, st.KeyID, now, until); err != nil {
		return fmt.Errorf("upstream slot of %s: wait: %w", st.Account, err)
	}
	return nil
}

// ReleaseSlot counts one fewer upstream job of an account, and of the holder's tenant and key
// (never below zero).
func (t *Tx) ReleaseSlot(ctx context.Context, h store.SlotHolder) error {
	if _, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END WHERE kind = 'upstream' AND owner = ?`, h.Account); err != nil {
		return fmt.Errorf("release upstream slot of %s: %w", h.Account, err)
	}
	if _, err := t.exec(ctx, `UPDATE upstream_holds SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
		WHERE account = ? AND tenant_id = ? AND key_id = ?`, h.Account, h.TenantID, h.KeyID); err != nil {
		return fmt.Errorf("release upstream slot of %s: %w", h.Account, err)
	}
	return nil
}

// LeaveSlotLine takes the task out of the line it waits in, if any.
func (t *Tx) LeaveSlotLine(ctx context.Context, taskID string) error {
	if _, err := t.exec(ctx, `DELETE FROM upstream_waits WHERE task_id = ?`, taskID); err != nil {
		return fmt.Errorf("leave the upstream slot line: %w", err)
	}
	return nil
}
