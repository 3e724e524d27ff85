-- ModelArk's asset library (kind ark_assets, docs/upstreams.md "ModelArk asset library"): a
-- group or asset of a tenant whose library is an ark_assets account is mirrored there.
-- upstream is the account's name (frozen at creation, like a task's account), upstream_id the
-- vendor's id of the group or asset, upstream_status the vendor's status of the asset
-- (Processing, Active, Failed; '' before it is registered). A verification session run by the
-- vendor keeps the vendor's token (its BytedToken) in upstream_token. Rows from before this
-- migration, and every row of the service's own library, have ''.
ALTER TABLE asset_groups ADD COLUMN upstream TEXT NOT NULL DEFAULT '';
ALTER TABLE asset_groups ADD COLUMN upstream_id TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN upstream TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN upstream_id TEXT NOT NULL DEFAULT '';
ALTER TABLE assets ADD COLUMN upstream_status TEXT NOT NULL DEFAULT '';
ALTER TABLE verify_sessions ADD COLUMN upstream TEXT NOT NULL DEFAULT '';
ALTER TABLE verify_sessions ADD COLUMN upstream_token TEXT NOT NULL DEFAULT '';
-- A vendor group belongs to one group of one tenant: a second binding is a conflict, so no
-- tenant can ever be handed another's vendor group.
CREATE UNIQUE INDEX asset_groups_upstream_id ON asset_groups (upstream, upstream_id) WHERE upstream_id <> '';
