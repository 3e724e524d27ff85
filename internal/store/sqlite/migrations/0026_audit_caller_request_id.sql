-- The X-Request-Id a caller of the admin API sent, kept apart from request_id, which is now
-- always the service's own id (issue 41): a client could otherwise write any id into the
-- audit log, another request's included. Entries written before this migration have none,
-- and their request_id may be a caller's.
ALTER TABLE admin_audit ADD COLUMN caller_request_id TEXT NOT NULL DEFAULT '';
