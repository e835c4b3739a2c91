-- The freshness witness's query (src/db/freshnessWitness.ts) runs for every lookup that found nothing: the
-- earliest send we know was accepted (sent by its own 2xx, not verified, not assumed), dispatched to the same
-- provider and API origin at or after the attempt asked about. Without an index it reads every sent row of the
-- log, which grows by one row per order forever. This partial index holds only such sends, keyed so that the
-- query is one range read in dispatched_at order that stops at its first match (LIMIT 1); the other columns
-- it compares (scope, credential fingerprint, HTTP status) are checked on the few rows read
-- (test/db/freshnessWitnessIndex.test.ts). On a large, busy log, create it beforehand without blocking
-- writes, under this name, and this is a no-op:
--   CREATE INDEX CONCURRENTLY order_mail_log_witness_idx ON order_mail_log
--     (dispatch_provider, dispatch_origin, dispatched_at)
--     WHERE state = 'sent' AND outcome = 'accepted' AND verification IS NULL AND dispatch_send_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS order_mail_log_witness_idx ON order_mail_log
    (dispatch_provider, dispatch_origin, dispatched_at)
    WHERE state = 'sent' AND outcome = 'accepted' AND verification IS NULL AND dispatch_send_key IS NOT NULL;
