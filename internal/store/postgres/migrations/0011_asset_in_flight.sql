-- Asset ingestions in flight per key and per tenant (the asset_ingests_in_flight limit,
-- docs/limits.md), counted in in_flight like tasks and speech: +1 when an asset is created
-- Processing, -1 when it leaves Processing (Active, Failed) or is deleted while Processing.
--   kind: asset_key, asset_tenant
-- The per-key count needs the key that created the asset, which assets did not record.
ALTER TABLE assets ADD COLUMN key_id TEXT NOT NULL DEFAULT '';
-- Assets already Processing are counted for their tenant. Their key is unknown (''), so no
-- key counts them, and their end moves no key's counter: a key's count only starts with the
-- assets it creates from now on.
INSERT INTO in_flight (kind, owner, n)
    SELECT 'asset_tenant', tenant_id, COUNT(*) FROM assets WHERE status = 'Processing' GROUP BY tenant_id;
