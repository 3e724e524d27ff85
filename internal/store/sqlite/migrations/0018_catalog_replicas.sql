-- Live catalog reload (docs/catalog.md, "Reload"). catalog_reloads is the queue of reload
-- requests of `mediagen admin catalog reload`: every replica polls its highest id and re-reads
-- its catalog file when it is above the last one it handled. catalog_replicas is what each
-- running replica last reported: the version (hash) in force, when it was loaded, the last
-- refused reload's problems, the request it handled last, and a heartbeat, so an operator sees
-- when every replica has a version. A replica removes its row when it stops cleanly; a killed
-- one's row stays, shown as stale by its heartbeat.
CREATE TABLE catalog_reloads (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    requested_at INTEGER NOT NULL,
    requested_by TEXT NOT NULL DEFAULT ''
) STRICT;
CREATE TABLE catalog_replicas (
    replica_id   TEXT PRIMARY KEY,
    role         TEXT NOT NULL,
    hash         TEXT NOT NULL,
    loaded_at    INTEGER NOT NULL,
    last_error   TEXT NOT NULL DEFAULT '',
    error_at     INTEGER NOT NULL DEFAULT 0,
    reload_seen  INTEGER NOT NULL DEFAULT 0,
    heartbeat_at INTEGER NOT NULL
) STRICT;
