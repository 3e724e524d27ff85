package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// A claim is fair between tenants, and between the keys of a tenant, however long anyone's
// backlog (docs/architecture.md#priority-and-fair-share). It runs in one transaction:
//
//  1. pickJobsQuery chooses the jobs: it walks the distinct (tenant, key, priority) of the kind
//     and queue with a skip scan of jobs_fair, takes the oldest due jobs of each (an index range
//     that stops at the first job not yet due) up to the group's share of the batch — the
//     tenant's weight's share of limit among the tenants with due jobs, split between its
//     groups, at least one — so that the candidates number about limit plus the groups, not
//     limit times the groups; counts the leased jobs of each
//     tenant and key (jobs_leased), and orders the candidates: the tenant with the fewest
//     leased jobs relative to its weight first, ties to the lowest pass (job_tenant_turns);
//     within a tenant the key with the fewest leased jobs, ties to its lowest pass; within a
//     key by priority, then age. Taking a job counts as one more leased job and one more step
//     of pass for its tenant and key, so a batch interleaves the way one-job claims would.
//     On PostgreSQL the chosen rows are locked FOR UPDATE SKIP LOCKED and re-checked as due,
//     so concurrent claimers take disjoint jobs without waiting.
//  2. The chosen jobs are leased (claimJobsUpdate).
//  3. Each tenant's and key's pass advances by the jobs it got (turnsUpsert).
//
// The cost follows the number of (tenant, key, priority) with jobs of the kind and the batch,
// never the backlog: one tenant's 100,000 due jobs are one group of which a claim reads at
// most limit rows. The share bounds how far one claim of many jobs can make up for a tenant's
// fewer leased jobs (at most its share of the batch); the next claims make up the rest, and a
// claim of one, the usual claim of a freed slot, is exact.
//
// Every lookup orders by all of jobs_fair's leading columns, even those its WHERE fixes, so
// that no planner mistakes another index for one that gives the order.
const pickJobsQuery = `WITH RECURSIVE
	weights(w_tenant, w) AS (%s),
	grp(t, k, p) AS (
		SELECT tenant_id, key_id, priority FROM (SELECT tenant_id, key_id, priority FROM jobs
			WHERE kind = ? AND queue = ? ORDER BY tenant_id, key_id, priority LIMIT 1) first_group
		UNION ALL
		SELECT n.tenant_id, n.key_id, n.priority FROM grp JOIN jobs n ON n.id = COALESCE(
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id = grp.k AND priority > grp.p
				ORDER BY tenant_id, key_id, priority LIMIT 1),
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id > grp.k
				ORDER BY tenant_id, key_id, priority LIMIT 1),
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id > grp.t
				ORDER BY tenant_id, key_id, priority LIMIT 1))),
	head(id, t, k, p, r) AS (
		SELECT c.id, c.tenant_id, c.key_id, c.priority, c.run_at FROM grp JOIN jobs c ON c.id = (SELECT id FROM jobs
			WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id = grp.k AND priority = grp.p AND run_at <= ?
			ORDER BY tenant_id, key_id, priority, run_at, id LIMIT 1)),
	heads AS (SELECT head.*, COALESCE(weights.w, 1) AS hw, COUNT(*) OVER (PARTITION BY head.t) AS gt
		FROM head LEFT JOIN weights ON weights.w_tenant = head.t),
	total(tw) AS (SELECT SUM(hw) FROM (SELECT DISTINCT t, hw FROM heads) due_tenants),
	cand(id, t, k, p, r, n, cap) AS (
		SELECT heads.id, heads.t, heads.k, heads.p, heads.r, 1, ((? * heads.hw + total.tw - 1) / total.tw + heads.gt - 1) / heads.gt
			FROM heads, total
		UNION ALL
		SELECT c.id, c.tenant_id, c.key_id, c.priority, c.run_at, cand.n + 1, cand.cap FROM cand JOIN jobs c ON c.id = %s
		WHERE cand.n < cand.cap),
	busy(bt, bk, bn) AS (SELECT tenant_id, key_id, COUNT(*) FROM jobs
		WHERE kind = ? AND queue = ? AND lease_until > 0 AND lease_until > ? GROUP BY tenant_id, key_id),
	tbusy(tt, tn) AS (SELECT bt, SUM(bn) FROM busy GROUP BY bt),
	keyed AS (SELECT cand.id, cand.t, cand.k, cand.p, cand.r,
			COALESCE(busy.bn, 0) + ROW_NUMBER() OVER (PARTITION BY cand.t, cand.k ORDER BY cand.p, cand.r, cand.id) - 1 AS kload,
			ROW_NUMBER() OVER (PARTITION BY cand.t, cand.k ORDER BY cand.p, cand.r, cand.id) AS kr,
			kt.pass AS kpass,
			COALESCE(MAX(kt.pass) OVER (PARTITION BY cand.t), 1) - 1 AS kfloor
		FROM cand LEFT JOIN busy ON busy.bt = cand.t AND busy.bk = cand.k
		LEFT JOIN job_key_turns kt ON kt.kind = ? AND kt.queue = ? AND kt.tenant_id = cand.t AND kt.key_id = cand.k),
	keyed2 AS (SELECT keyed.*, CASE WHEN kpass > kfloor THEN kpass ELSE kfloor END AS kpe FROM keyed),
	tenanted AS (SELECT keyed2.*,
			ROW_NUMBER() OVER (PARTITION BY t ORDER BY kload, kpe + kr, p, r, id) AS tr,
			COALESCE(tbusy.tn, 0) AS tn, tt.pass AS tpass,
			COALESCE(MAX(tt.pass) OVER (), 1) - 1 AS tfloor,
			COALESCE(weights.w, 1) AS w
		FROM keyed2 LEFT JOIN tbusy ON tbusy.tt = keyed2.t
		LEFT JOIN job_tenant_turns tt ON tt.kind = ? AND tt.queue = ? AND tt.tenant_id = keyed2.t
		LEFT JOIN weights ON weights.w_tenant = keyed2.t),
	scored AS (SELECT tenanted.*, CASE WHEN tpass > tfloor THEN tpass ELSE tfloor END AS tpe FROM tenanted),
	pick AS (SELECT id, t, k, tpe, kpe, w FROM scored
		ORDER BY CAST(tn + tr - 1 AS DOUBLE PRECISION) / w, tpe + CAST(tr AS DOUBLE PRECISION) / w, p, r, id LIMIT ?),
	locked AS (SELECT id AS locked_id FROM jobs WHERE id IN (SELECT id FROM pick) AND run_at <= ?%s)
	SELECT id, t, k, tpe, kpe, w FROM pick JOIN locked ON locked.locked_id = pick.id`

// nextInGroup is the job after cand in its group's order, as each dialect's planner seeks it
// in jobs_fair. PostgreSQL takes the row comparison as one index condition; with the pair
// spelled out (the SQLite form) its generic plan walked the primary key from cand.id instead
// and sorted what it found: 18 s for a claim of 64 on a backlog of 100,000. SQLite uses only
// the row comparison's first column to seek and filters the rest, which reads every job of
// the group due at the same instant; the pair seeks exactly.
const (
	nextInGroupRow = `(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = cand.t AND key_id = cand.k
			AND priority = cand.p AND (run_at, id) > (cand.r, cand.id) AND run_at <= ?
			ORDER BY tenant_id, key_id, priority, run_at, id LIMIT 1)`
	nextInGroupPair = `COALESCE(
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = cand.t AND key_id = cand.k AND priority = cand.p
				AND run_at = cand.r AND id > cand.id ORDER BY tenant_id, key_id, priority, run_at, id LIMIT 1),
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = cand.t AND key_id = cand.k AND priority = cand.p
				AND run_at > cand.r AND run_at <= ? ORDER BY tenant_id, key_id, priority, run_at, id LIMIT 1))`
)

// anyDueQuery finds whether anything of the kind and queue is due (jobs_due).
const anyDueQuery = `SELECT 1 FROM jobs WHERE kind = ? AND queue = ? AND run_at <= ? LIMIT 1`

// claimJobsUpdate leases the chosen jobs (the id list is appended): run_at becomes the lease's
// end, so a job whose holder dies is due again then.
const claimJobsUpdate = `UPDATE jobs SET lease_token = ?, lease_until = ?, run_at = ?, attempts = attempts + 1
	WHERE id IN (%s)
	RETURNING id, kind, queue, ref, tenant_id, key_id, priority, payload, deadline, created_at, attempts`

// turnsUpsert advances a tenant's (key's) pass by the jobs it got. base is the pass the claim
// read (floored): a concurrent claim that advanced it since is added to, not overwritten.
const (
	tenantTurnsUpsert = `INSERT INTO job_tenant_turns (kind, queue, tenant_id, pass) VALUES (?, ?, ?, ?)
		ON CONFLICT (kind, queue, tenant_id) DO UPDATE
		SET pass = CASE WHEN job_tenant_turns.pass > ? THEN job_tenant_turns.pass ELSE ? END + ?`
	keyTurnsUpsert = `INSERT INTO job_key_turns (kind, queue, tenant_id, key_id, pass) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (kind, queue, tenant_id, key_id) DO UPDATE
		SET pass = CASE WHEN job_key_turns.pass > ? THEN job_key_turns.pass ELSE ? END + ?`
)

// maxWeight bounds a tenant's weight in the claim (the catalog validates the same range): a
// weight is a share of the workers, and a share beyond 100 to 1 is no longer sharing.
const maxWeight = 100

// weightsCTE is the body of the weights CTE and its arguments: one row per tenant whose
// weight is not 1, in a stable order so that equal maps make the same statement text.
func weightsCTE(weights map[string]int) (string, []any) {
	parts := []string{`SELECT CAST('' AS TEXT), CAST(1 AS INTEGER)`}
	var args []any
	tenants := make([]string, 0, len(weights))
	for t, w := range weights {
		if t != "" && w != 1 {
			tenants = append(tenants, t)
		}
	}
	slices.Sort(tenants)
	for _, t := range tenants {
		parts = append(parts, `SELECT CAST(? AS TEXT), CAST(? AS INTEGER)`)
		args = append(args, t, min(max(weights[t], 1), maxWeight))
	}
	return strings.Join(parts, " UNION ALL "), args
}

// picked is one job a claim chose, with what its turns need.
type picked struct {
	id, tenant, key string
	tenantBase      float64 // the tenant's pass as the claim read it
	keyBase         float64
	weight          int
}

// ClaimJobs leases up to limit due jobs, fairly between tenants and their keys (see above).
// Every job of one claim gets the same fresh token.
func (db *DB) ClaimJobs(ctx context.Context, kind, queue string, now time.Time, lease time.Duration, limit int, weights map[string]int) ([]store.Job, error) {
	if limit <= 0 {
		return nil, nil
	}
	n := micros(now)
	// Most polls find nothing due: one seek of jobs_due on the read handle answers them
	// without the pick or a write transaction (on SQLite, without the one writer).
	var one int
	switch err := db.readRow(ctx, anyDueQuery, kind, queue, n).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("claim %s jobs: %w", kind, err)
	}
	token := idgen.New("lease")
	until := micros(now.Add(lease))
	wbody, wargs := weightsCTE(weights)
	next, nextArgs := nextInGroupPair, []any{kind, queue, kind, queue, n}
	if db.d.Name() == "postgres" {
		next, nextArgs = nextInGroupRow, []any{kind, queue, n}
	}
	pickQuery := fmt.Sprintf(pickJobsQuery, wbody, next, db.d.ClaimLock())
	args := append(wargs, kind, queue, kind, queue, kind, queue, kind, queue, kind, queue, n, limit)
	args = append(args, nextArgs...)
	args = append(args, kind, queue, n, kind, queue, kind, queue, limit, n)
	var out []store.Job
	err := db.transactOnce(ctx, func(stx store.Tx) error {
		t := stx.(*Tx)
		if setup := db.d.ClaimSetup(); setup != "" {
			if err := t.query(ctx, setup, nil, func(Rows) error { return nil }); err != nil {
				return err
			}
		}
		var picks []picked
		err := t.query(ctx, pickQuery, args, func(rows Rows) error {
			for rows.Next() {
				var p picked
				if err := rows.Scan(&p.id, &p.tenant, &p.key, &p.tenantBase, &p.keyBase, &p.weight); err != nil {
					return err
				}
				picks = append(picks, p)
			}
			return nil
		})
		if err != nil || len(picks) == 0 {
			return err
		}
		order := make(map[string]int, len(picks))
		for i, p := range picks {
			order[p.id] = i
		}
		uargs := []any{token, until, until}
		for _, p := range picks {
			uargs = append(uargs, p.id)
		}
		update := fmt.Sprintf(claimJobsUpdate, strings.TrimSuffix(strings.Repeat("?, ", len(picks)), ", "))
		err = t.query(ctx, update, uargs, func(rows Rows) error {
			for rows.Next() {
				j := store.Job{Token: token, RunAt: fromMicros(until)}
				var payload string
				var deadline, created int64
				if err := rows.Scan(&j.ID, &j.Kind, &j.Queue, &j.Ref, &j.TenantID, &j.KeyID, &j.Priority, &payload, &deadline, &created, &j.Attempt); err != nil {
					return err
				}
				if payload != "" {
					j.Payload = []byte(payload)
				}
				j.Deadline, j.CreatedAt = fromMicros(deadline), fromMicros(created)
				out = append(out, j)
			}
			return nil
		})
		if err != nil {
			return err
		}
		// In the order chosen: the first job is the one the fairest claim of one would take.
		slices.SortFunc(out, func(a, b store.Job) int { return order[a.ID] - order[b.ID] })
		return advanceTurns(ctx, t, kind, queue, picks)
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s jobs: %w", kind, err)
	}
	return out, nil
}

// advanceTurns adds to each tenant's pass 1/weight per job it got, and 1 to each key's, in a
// fixed order (tenants, then keys, sorted) so that concurrent claims cannot deadlock on them.
func advanceTurns(ctx context.Context, t *Tx, kind, queue string, picks []picked) error {
	type tk struct{ tenant, key string }
	tenants := map[string]float64{}
	keys := map[tk]float64{}
	tbase := map[string]float64{}
	kbase := map[tk]float64{}
	for _, p := range picks {
		tenants[p.tenant] += 1 / float64(p.weight)
		keys[tk{p.tenant, p.key}]++
		tbase[p.tenant], kbase[tk{p.tenant, p.key}] = p.tenantBase, p.keyBase
	}
	for _, tenant := range slices.Sorted(maps.Keys(tenants)) {
		b, inc := tbase[tenant], tenants[tenant]
		if _, err := t.exec(ctx, tenantTurnsUpsert, kind, queue, tenant, b+inc, b, b, inc); err != nil {
			return fmt.Errorf("tenant turns: %w", err)
		}
	}
	ks := slices.SortedFunc(maps.Keys(keys), func(a, b tk) int {
		if c := strings.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	for _, k := range ks {
		b, inc := kbase[k], keys[k]
		if _, err := t.exec(ctx, keyTurnsUpsert, kind, queue, k.tenant, k.key, b+inc, b, b, inc); err != nil {
			return fmt.Errorf("key turns: %w", err)
		}
	}
	return nil
}
