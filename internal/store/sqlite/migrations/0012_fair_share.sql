-- Fair share between tenants, and between keys of one tenant, in every job kind
-- (docs/architecture.md#priority-and-fair-share). A claim prefers the tenant with the fewest
-- leased jobs of the kind relative to its catalog weight, then within it the key with the
-- fewest, then priority and age; ties go to whoever was served least (its pass, below).
--
-- A job records the key whose request made it, for fair share between keys of a tenant.
ALTER TABLE jobs ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
UPDATE jobs SET key_id = COALESCE((SELECT key_id FROM tasks WHERE tasks.id = jobs.ref), '') WHERE kind = 'video.task';
UPDATE jobs SET key_id = COALESCE((SELECT key_id FROM assets WHERE assets.id = jobs.ref), '') WHERE kind = 'asset.ingest';
UPDATE jobs SET key_id = COALESCE((SELECT key_id FROM verify_sessions WHERE verify_sessions.id = jobs.ref), '') WHERE kind = 'verify.callback';

-- A claim first finds the tenants of a kind and queue with a due job: a skip scan of
-- jobs_tenant_due, where each tenant's first entry is its oldest job (one seek a tenant,
-- however many keys and jobs it has). Then, for the tenants it takes from only, it walks their
-- distinct (key, priority) and takes each one's oldest due jobs from jobs_fair, so its cost
-- follows the tenants with work, the keys of those it serves and the batch, not the backlog.
-- run_at is the lease's end for leased jobs, so expired leases are due here too. jobs_due
-- (kind, queue, run_at) stays for the claim's first look, one seek that finds whether anything
-- is due at all: an idle poll costs no more than that.
CREATE INDEX jobs_tenant_due ON jobs (kind, queue, tenant_id, run_at);
CREATE INDEX jobs_fair ON jobs (kind, queue, tenant_id, key_id, priority, run_at, id);
-- The leased jobs of a kind, counted per tenant and key at each claim: few (the workers of
-- every replica), so a partial index keeps the count off the backlog.
CREATE INDEX jobs_leased ON jobs (kind, queue, lease_until, tenant_id, key_id) WHERE lease_until > 0;

-- How much each tenant, and each key of a tenant, has been served in a kind and queue: a claim
-- adds 1/weight to the tenant's pass for each job it takes (1 to the key's), and between
-- tenants (keys) with as many leased jobs the lower pass goes first (stride scheduling). With
-- one worker a freed slot always finds everyone at zero leased jobs; the pass is what makes the
-- tenant that just ran wait for the one that did not. A pass is never read more than one job
-- behind the most-served candidate, so a tenant back from idle gets its turn, not a burst.
CREATE TABLE job_tenant_turns (
    kind      TEXT NOT NULL,
    queue     TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    pass      REAL NOT NULL,
    PRIMARY KEY (kind, queue, tenant_id)
) STRICT;
CREATE TABLE job_key_turns (
    kind      TEXT NOT NULL,
    queue     TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    pass      REAL NOT NULL,
    PRIMARY KEY (kind, queue, tenant_id, key_id)
) STRICT;

-- An upstream account's slots (max_in_flight, counted in in_flight) go to the tasks waiting for
-- them fairly too: a freed slot goes to the waiting task whose tenant holds the fewest of the
-- account's slots, then whose key holds the fewest, then the one waiting longest.
-- upstream_holds counts the slots each tenant's key holds; slots taken before this migration
-- are counted in in_flight only, so they weigh on no tenant's place in line (they end within a
-- task's life).
CREATE TABLE upstream_holds (
    account   TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    key_id    TEXT NOT NULL,
    n         INTEGER NOT NULL,
    PRIMARY KEY (account, tenant_id, key_id)
) STRICT;
-- The line: tasks refused a slot, each until seen_until (its last ask plus its wait): a task
-- that stops asking (it ended, or its process died) leaves the line by itself.
CREATE TABLE upstream_waits (
    task_id    TEXT PRIMARY KEY,
    account    TEXT NOT NULL,
    tenant_id  TEXT NOT NULL,
    key_id     TEXT NOT NULL,
    since      INTEGER NOT NULL,
    seen_until INTEGER NOT NULL
) STRICT;
CREATE INDEX upstream_waits_line ON upstream_waits (account, seen_until);
