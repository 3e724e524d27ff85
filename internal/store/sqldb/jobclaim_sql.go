package sqldb

import (
	"fmt"
	"strings"
)

// The statements of a claim (jobclaim.go says how they fit together). Every lookup orders by
// the leading columns of the index it means to seek, even those its WHERE fixes, so that no
// planner mistakes another index for one that gives the order.

// dueTenantsQuery is stage 1: the tenants with a due job of the kind and queue, each with its
// oldest run_at and its pass, then the leased jobs per tenant and key. The tenants come from a
// skip scan of jobs_tenant_due (kind, queue, tenant_id, run_at): one seek finds the next
// tenant, one more its oldest run_at (due if it is not after now), both in the index. The
// leased jobs come from jobs_leased, a partial index of the few leased rows. Rows are tagged:
// 0 for a tenant (t, an empty key, oldest run_at, pass or NULL), 1 for a key's leased count
// (t, k, count, NULL). oldest is materialized so that each tenant's seek runs once, and the
// passes are read by primary key seeks: as a join, PostgreSQL's plan filtered every pass of
// the kind for each tenant (a million comparisons with 1,000 tenants). The dialect's ClaimSetup is evaluated last (claimSetupBranch).
const dueTenantsQuery = `WITH RECURSIVE
	tenants(t) AS (
		SELECT (SELECT tenant_id FROM jobs WHERE kind = ? AND queue = ?
			ORDER BY kind, queue, tenant_id, run_at LIMIT 1)
		UNION ALL
		SELECT (SELECT tenant_id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id > tenants.t
			ORDER BY kind, queue, tenant_id, run_at LIMIT 1)
		FROM tenants WHERE tenants.t IS NOT NULL),
	oldest(t, r) AS MATERIALIZED (
		SELECT t, (SELECT run_at FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = tenants.t
			ORDER BY kind, queue, tenant_id, run_at LIMIT 1)
		FROM tenants WHERE t IS NOT NULL)
	SELECT 0, oldest.t, '', oldest.r, (SELECT pass FROM job_tenant_turns tt
			WHERE tt.kind = ? AND tt.queue = ? AND tt.tenant_id = oldest.t)
		FROM oldest WHERE oldest.r <= ?
	UNION ALL
	SELECT 1, tenant_id, key_id, COUNT(*), NULL FROM jobs
		WHERE kind = ? AND queue = ? AND lease_until > 0 AND lease_until > ? GROUP BY tenant_id, key_id%s`

// claimSetupBranch evaluates the dialect's ClaimSetup in dueTenantsQuery and returns no row:
// the settings hold for the statements after it in the transaction.
const claimSetupBranch = `
	UNION ALL
	SELECT 2, '', '', 0, NULL WHERE (%s) IS NULL`

// dueTenants is dueTenantsQuery with the dialect's setup, and its arguments.
func (db *DB) dueTenants(kind, queue string, now int64) (string, []any) {
	setup := ""
	if s := db.d.ClaimSetup(); s != "" {
		setup = fmt.Sprintf(claimSetupBranch, s)
	}
	return fmt.Sprintf(dueTenantsQuery, setup), []any{kind, queue, kind, queue, kind, queue, kind, queue, now, kind, queue, now}
}

// candidatesQuery is stage 2, for the tenants a claim takes from (the shares CTE: each
// tenant and its share of the batch): it walks their distinct (key, priority) with a skip scan
// of jobs_fair, takes the oldest due jobs of each such group (an index range that stops at the
// first job not yet due) up to the group's cap — the tenant's share split between its groups
// with a due job, at least one — and returns them with their key's pass. The groups per
// tenant are counted with GROUP BY: a window needs a sort, which PostgreSQL's claim settings
// rule out, and a correlated count made SQLite's claim of 64 over 100 tenants 5× slower.
const candidatesQuery = `WITH RECURSIVE
	shares(s_t, s_n) AS (%s),
	grp(t, k, p) AS (
		SELECT g.tenant_id, g.key_id, g.priority FROM shares JOIN jobs g ON g.id = (SELECT id FROM jobs
			WHERE kind = ? AND queue = ? AND tenant_id = shares.s_t ORDER BY tenant_id, key_id, priority LIMIT 1)
		UNION ALL
		SELECT n.tenant_id, n.key_id, n.priority FROM grp JOIN jobs n ON n.id = COALESCE(
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id = grp.k AND priority > grp.p
				ORDER BY tenant_id, key_id, priority LIMIT 1),
			(SELECT id FROM jobs WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id > grp.k
				ORDER BY tenant_id, key_id, priority LIMIT 1))),
	head(id, t, k, p, r) AS (
		SELECT c.id, c.tenant_id, c.key_id, c.priority, c.run_at FROM grp JOIN jobs c ON c.id = (SELECT id FROM jobs
			WHERE kind = ? AND queue = ? AND tenant_id = grp.t AND key_id = grp.k AND priority = grp.p AND run_at <= ?
			ORDER BY tenant_id, key_id, priority, run_at, id LIMIT 1)),
	groups(g_t, gt) AS (SELECT t, COUNT(*) FROM head GROUP BY t),
	heads AS (SELECT head.*, shares.s_n AS share, groups.gt
		FROM head JOIN shares ON shares.s_t = head.t JOIN groups ON groups.g_t = head.t),
	cand(id, t, k, p, r, n, cap) AS (
		SELECT id, t, k, p, r, 1, (share + gt - 1) / gt FROM heads
		UNION ALL
		SELECT c.id, c.tenant_id, c.key_id, c.priority, c.run_at, cand.n + 1, cand.cap FROM cand JOIN jobs c ON c.id = %s
		WHERE cand.n < cand.cap)
	SELECT cand.id, cand.t, cand.k, cand.p, cand.r, (SELECT pass FROM job_key_turns kt
			WHERE kt.kind = ? AND kt.queue = ? AND kt.tenant_id = cand.t AND kt.key_id = cand.k)
		FROM cand`

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

// candidates is candidatesQuery for the tenants (with their shares) and its arguments.
func (db *DB) candidates(kind, queue string, now int64, tenants []*dueTenant) (string, []any) {
	rows := make([]string, len(tenants))
	var args []any
	for i, t := range tenants {
		rows[i] = `SELECT CAST(? AS TEXT), CAST(? AS INTEGER)`
		args = append(args, t.id, t.share)
	}
	next, nextArgs := nextInGroupPair, []any{kind, queue, kind, queue, now}
	if db.d.Name() == "postgres" {
		next, nextArgs = nextInGroupRow, []any{kind, queue, now}
	}
	args = append(args, kind, queue, kind, queue, kind, queue, kind, queue, now)
	args = append(args, nextArgs...)
	args = append(args, kind, queue)
	return fmt.Sprintf(candidatesQuery, strings.Join(rows, " UNION ALL "), next), args
}

// anyDueQuery finds whether anything of the kind and queue is due (jobs_due).
const anyDueQuery = `SELECT 1 FROM jobs WHERE kind = ? AND queue = ? AND run_at <= ? LIMIT 1`

// leaseJobsUpdate leases the chosen jobs that are still due (the id list is inserted, then
// the dialect's ClaimLock: on PostgreSQL rows another claimer holds are skipped, not waited
// for, so concurrent claimers take disjoint jobs). run_at becomes the lease's end, so a job
// whose holder dies is due again then.
const leaseJobsUpdate = `UPDATE jobs SET lease_token = ?, lease_until = ?, run_at = ?, attempts = attempts + 1
	WHERE id IN (SELECT id FROM jobs WHERE id IN (%s) AND run_at <= ?%s)
	RETURNING id, kind, queue, ref, tenant_id, key_id, priority, payload, deadline, created_at, attempts, traceparent, tracestate, request_id`

// The turns upserts advance each tenant's (key's) pass by what it got, for all of them in one
// statement: pass becomes the larger of the stored pass and base — the pass the claim read,
// floored — plus inc. A concurrent claim that advanced it since is added to, not overwritten.
// The rows come sorted, so that concurrent claims lock them in the same order.
const (
	tenantTurnsUpsert = `WITH v(t, base, inc) AS (%s)
	INSERT INTO job_tenant_turns (kind, queue, tenant_id, pass) SELECT ?, ?, t, base + inc FROM v WHERE true
	ON CONFLICT (kind, queue, tenant_id) DO UPDATE SET pass = (SELECT
		CASE WHEN job_tenant_turns.pass > v.base THEN job_tenant_turns.pass ELSE v.base END + v.inc
		FROM v WHERE v.t = excluded.tenant_id)`
	keyTurnsUpsert = `WITH v(t, k, base, inc) AS (%s)
	INSERT INTO job_key_turns (kind, queue, tenant_id, key_id, pass) SELECT ?, ?, t, k, base + inc FROM v WHERE true
	ON CONFLICT (kind, queue, tenant_id, key_id) DO UPDATE SET pass = (SELECT
		CASE WHEN job_key_turns.pass > v.base THEN job_key_turns.pass ELSE v.base END + v.inc
		FROM v WHERE v.t = excluded.tenant_id AND v.k = excluded.key_id)`
)

// placeholders is n comma-separated placeholders.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
