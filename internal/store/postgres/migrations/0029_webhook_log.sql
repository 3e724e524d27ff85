-- The webhook delivery log's retention sweep (docs/webhooks.md, "Delivery log"): it deletes
-- ended deliveries (delivered or failed) oldest last touch first, a bounded batch at a time.
-- Pending deliveries, which their jobs still read, are not in the index and never swept.
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (updated_at) WHERE status <> 'pending';
