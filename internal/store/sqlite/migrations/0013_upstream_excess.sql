-- What upstream accounts did beyond a request, or below what their result implies
-- (docs/billing.md, "Upstream excess and under-reporting"): written in the transaction that
-- settles the task or speech, never changed. The operator's, never the tenant's: nothing here
-- moves money. Listed by `mediagen admin upstream excess`.
CREATE TABLE upstream_excess (
    id          TEXT PRIMARY KEY,
    upstream    TEXT NOT NULL,
    route       TEXT NOT NULL,
    ref         TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    claimed     INTEGER NOT NULL,
    charged     INTEGER NOT NULL,
    amount      INTEGER NOT NULL,
    currency    TEXT NOT NULL,
    detail      TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
) STRICT;
-- An account's records, newest first; and a task's or speech's.
CREATE INDEX upstream_excess_by_upstream ON upstream_excess (upstream, created_at);
CREATE INDEX upstream_excess_by_ref ON upstream_excess (ref);
