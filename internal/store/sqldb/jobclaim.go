package sqldb

import (
	"cmp"
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
// backlog (docs/architecture.md#priority-and-fair-share). Each job it takes goes to the tenant
// with the fewest leased jobs relative to its weight, ties to the lowest pass
// (job_tenant_turns); within the tenant to the key with the fewest leased jobs, ties to its
// lowest pass (job_key_turns); within the key by priority, then age. Taking a job counts as one
// more leased job and one more step of pass for its tenant and key, so a batch interleaves the
// way one-job claims would. It runs in one transaction, in stages, so that it reads only the
// keys of the tenants it takes from:
//
//  1. dueTenantsQuery reads the tenants with a due job (one skip-scan step and one seek of
//     jobs_tenant_due each, whatever their keys and backlogs), their passes, and the leased
//     jobs per tenant and key (jobs_leased: bounded by the workers). Each tenant's share of the
//     batch is its weight's share of limit among them, at least one; allot orders the tenants'
//     slots and counts how many jobs each gets.
//  2. candidatesQuery reads, for those tenants only, the oldest due jobs of each (key,
//     priority) with a due job, up to the tenant's share split between them, at least one
//     (a skip scan of jobs_fair over the tenant's keys), so that the candidates number about
//     the batch plus the groups; orderKeys orders them as the keys take turns. A tenant with
//     fewer candidates than it was allotted leaves the rest to the others: allot again, and
//     read the tenants that now get jobs too (rarely a second round, never more than the
//     tenants).
//  3. leaseJobsUpdate leases the chosen jobs, re-checking each is still due; on PostgreSQL
//     FOR UPDATE SKIP LOCKED, so concurrent claimers take disjoint jobs without waiting.
//  4. The tenants' and keys' passes advance by the jobs they got: one upsert per table.
//
// The cost follows the number of tenants with jobs of the kind (a seek or two each), the keys
// of the tenants the claim takes from, and the batch — never the backlog, nor the keys of
// tenants it does not take from. Five statements (six with a second round of stage 2) plus
// begin and commit. Between tenants equal on leased jobs and pass, the one whose oldest job is
// oldest is taken (stage 1 does not read their keys); within a tenant ties go by priority,
// then age. The share bounds how far one claim of many jobs can make up for a tenant's fewer
// leased jobs (at most its share of the batch); the next claims make up the rest, and a claim
// of one, the usual claim of a freed slot, is exact.

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
	c := claim{db: db, kind: kind, queue: queue, now: n, limit: limit, weights: weights}
	var out []store.Job
	err := db.transactOnce(ctx, func(stx store.Tx) error {
		jobs, err := c.run(ctx, stx.(*Tx), idgen.New("lease"), micros(now.Add(lease)))
		out = jobs
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s jobs: %w", kind, err)
	}
	return out, nil
}

// claim is one ClaimJobs in its transaction.
type claim struct {
	db          *DB
	kind, queue string
	now         int64
	limit       int
	weights     map[string]int
	// leased counts the leased jobs per tenant and key (stage 1).
	leased map[tenantKey]int
}

// run chooses the jobs, leases them under token until until, and advances the turns.
func (c *claim) run(ctx context.Context, t *Tx, token string, until int64) ([]store.Job, error) {
	tenants, err := c.dueTenants(ctx, t)
	if err != nil || len(tenants) == 0 {
		return nil, err
	}
	setShares(tenants, c.limit)
	for {
		allot(tenants, c.limit)
		var fetch []*dueTenant
		for _, d := range tenants {
			if d.take > 0 && !d.fetched {
				fetch = append(fetch, d)
			}
		}
		if len(fetch) == 0 {
			break
		}
		if err := c.readCandidates(ctx, t, fetch); err != nil {
			return nil, err
		}
	}
	chosen := taken(tenants)
	if len(chosen) == 0 {
		return nil, nil
	}
	jobs, err := c.lease(ctx, t, chosen, token, until)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	byTenant := make(map[string]*dueTenant, len(tenants))
	for _, d := range tenants {
		byTenant[d.id] = d
	}
	return jobs, c.advanceTurns(ctx, t, jobs, chosen, byTenant)
}

// dueTenants is stage 1: the tenants with a due job, their floored passes and leased jobs,
// and (in c.leased) the leased jobs of each key.
func (c *claim) dueTenants(ctx context.Context, t *Tx) ([]*dueTenant, error) {
	var tenants []*dueTenant
	var passes []*float64
	c.leased = map[tenantKey]int{}
	tenantLeased := map[string]int{}
	query, args := c.db.dueTenants(c.kind, c.queue, c.now)
	err := t.query(ctx, query, args, func(rows Rows) error {
		for rows.Next() {
			var tag int
			var tenant, key string
			var n int64
			var pass sql.NullFloat64
			if err := rows.Scan(&tag, &tenant, &key, &n, &pass); err != nil {
				return err
			}
			if tag == 1 {
				c.leased[tenantKey{tenant, key}] += int(n)
				tenantLeased[tenant] += int(n)
				continue
			}
			tenants = append(tenants, &dueTenant{id: tenant, oldest: n, weight: weightOf(c.weights, tenant)})
			var p *float64
			if pass.Valid {
				p = &pass.Float64
			}
			passes = append(passes, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("due tenants: %w", err)
	}
	floor := passFloor(passes)
	for i, d := range tenants {
		d.pass = floored(passes[i], floor)
		d.leased = tenantLeased[d.id]
	}
	return tenants, nil
}

// readCandidates is stage 2 for the tenants: their candidates, in their keys' order.
func (c *claim) readCandidates(ctx context.Context, t *Tx, tenants []*dueTenant) error {
	byTenant := make(map[string]*dueTenant, len(tenants))
	for _, d := range tenants {
		byTenant[d.id] = d
		d.fetched = true
	}
	keyPasses := map[string][]*float64{}
	var cands []candidate
	var passes []*float64
	query, args := c.db.candidates(c.kind, c.queue, c.now, tenants)
	err := t.query(ctx, query, args, func(rows Rows) error {
		for rows.Next() {
			var cd candidate
			var pass sql.NullFloat64
			if err := rows.Scan(&cd.id, &cd.tenant, &cd.key, &cd.priority, &cd.runAt, &pass); err != nil {
				return err
			}
			var p *float64
			if pass.Valid {
				p = &pass.Float64
			}
			cands = append(cands, cd)
			passes = append(passes, p)
			keyPasses[cd.tenant] = append(keyPasses[cd.tenant], p)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("candidates: %w", err)
	}
	for i, cd := range cands {
		cd.keyPass = floored(passes[i], passFloor(keyPasses[cd.tenant]))
		if d := byTenant[cd.tenant]; d != nil {
			d.cands = append(d.cands, cd)
		}
	}
	for _, d := range tenants {
		orderKeys(d.cands, c.leased)
	}
	return nil
}

// lease leases the chosen jobs still due (on PostgreSQL, those no other claimer holds), in
// the order chosen: the first is the one the fairest claim of one would take.
func (c *claim) lease(ctx context.Context, t *Tx, chosen []candidate, token string, until int64) ([]store.Job, error) {
	order := make(map[string]int, len(chosen))
	args := []any{token, until, until}
	for i, cd := range chosen {
		order[cd.id] = i
		args = append(args, cd.id)
	}
	args = append(args, c.now)
	update := fmt.Sprintf(leaseJobsUpdate, placeholders(len(chosen)), c.db.d.ClaimLock())
	var out []store.Job
	err := t.query(ctx, update, args, func(rows Rows) error {
		for rows.Next() {
			j := store.Job{Token: token, RunAt: fromMicros(until)}
			var payload string
			var deadline, created int64
			if err := rows.Scan(&j.ID, &j.Kind, &j.Queue, &j.Ref, &j.TenantID, &j.KeyID, &j.Priority, &payload, &deadline, &created, &j.Attempt, &j.TraceParent, &j.TraceState, &j.RequestID); err != nil {
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
		return nil, fmt.Errorf("lease: %w", err)
	}
	slices.SortFunc(out, func(a, b store.Job) int { return order[a.ID] - order[b.ID] })
	return out, nil
}

// advanceTurns adds to each tenant's pass 1/weight per job it got, and 1 to each key's: one
// upsert per table, rows sorted (tenants, then keys) so that concurrent claims cannot deadlock
// on them.
func (c *claim) advanceTurns(ctx context.Context, t *Tx, jobs []store.Job, chosen []candidate, tenants map[string]*dueTenant) error {
	keyBase := make(map[tenantKey]float64, len(chosen))
	for _, cd := range chosen {
		keyBase[tenantKey{cd.tenant, cd.key}] = cd.keyPass
	}
	tenantInc := map[string]float64{}
	keyInc := map[tenantKey]float64{}
	for _, j := range jobs {
		tenantInc[j.TenantID] += 1 / float64(tenants[j.TenantID].weight)
		keyInc[tenantKey{j.TenantID, j.KeyID}]++
	}
	var rows []string
	var args []any
	for _, tenant := range slices.Sorted(maps.Keys(tenantInc)) {
		rows = append(rows, `SELECT CAST(? AS TEXT), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION)`)
		args = append(args, tenant, tenants[tenant].pass, tenantInc[tenant])
	}
	args = append(args, c.kind, c.queue)
	if _, err := t.exec(ctx, fmt.Sprintf(tenantTurnsUpsert, strings.Join(rows, " UNION ALL ")), args...); err != nil {
		return fmt.Errorf("tenant turns: %w", err)
	}
	rows, args = rows[:0], nil
	keys := slices.SortedFunc(maps.Keys(keyInc), func(a, b tenantKey) int {
		return cmp.Or(strings.Compare(a.tenant, b.tenant), strings.Compare(a.key, b.key))
	})
	for _, k := range keys {
		rows = append(rows, `SELECT CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION)`)
		args = append(args, k.tenant, k.key, keyBase[k], keyInc[k])
	}
	args = append(args, c.kind, c.queue)
	if _, err := t.exec(ctx, fmt.Sprintf(keyTurnsUpsert, strings.Join(rows, " UNION ALL ")), args...); err != nil {
		return fmt.Errorf("key turns: %w", err)
	}
	return nil
}
