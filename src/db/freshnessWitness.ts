// The freshness witness's query: the earliest send known accepted by its own 2xx (or a witness probe) to the
// same destination, within witnessBounds', from the index of migration 0031 (docs/design.md §5, "fresh").
import type { SendDestination } from '../evidence/destination';
import type { WitnessBounds, WitnessSend } from '../evidence/freshnessCheck';
import type { Database } from './pool';
import { runSql, sql } from './sql';

export async function findWitnessCandidate(
  db: Database,
  input: { orderId: string; destination: SendDestination; bounds: WitnessBounds },
): Promise<WitnessSend | null> {
  const { destination, bounds } = input;
  // No upper bound is 'infinity', so that the statement (and its plan) is one and the same either way.
  const endedBy = bounds.endedBy === null ? 'infinity' : bounds.endedBy.toISOString();
  const { rows } = await runSql<{
    orderId: string;
    sendKey: string;
    dispatchedAt: Date;
    sendTimeoutMs: number;
  }>(
    db,
    sql`(SELECT order_id::text AS "orderId", dispatch_send_key AS "sendKey", dispatched_at AS "dispatchedAt",
                dispatch_send_timeout_ms AS "sendTimeoutMs"
           FROM order_mail_log
          WHERE state = 'sent' AND outcome = 'accepted' AND verification IS NULL
            AND http_status BETWEEN 200 AND 299
            AND dispatched_at >= ${bounds.dispatchedFrom}
            AND dispatched_at <= ${endedBy}::timestamptz
            AND dispatched_at + dispatch_send_timeout_ms * interval '1 millisecond' <= ${endedBy}::timestamptz
            AND order_id <> ${input.orderId}
            AND dispatch_send_key IS NOT NULL
            AND dispatch_provider = ${destination.provider}
            AND dispatch_origin = ${destination.origin}
            AND dispatch_scope IS NOT DISTINCT FROM ${destination.scope}
            AND dispatch_credential_fingerprint IS NOT DISTINCT FROM ${destination.credentialFingerprint}
          ORDER BY dispatched_at
          LIMIT 1)
        UNION ALL
        (SELECT probe_id, send_key, dispatched_at, send_timeout_ms
           FROM order_mail_witness_probes
          WHERE outcome = 'accepted' AND http_status BETWEEN 200 AND 299
            AND dispatched_at >= ${bounds.dispatchedFrom}
            AND dispatched_at <= ${endedBy}::timestamptz
            AND dispatched_at + send_timeout_ms * interval '1 millisecond' <= ${endedBy}::timestamptz
            AND provider = ${destination.provider}
            AND origin = ${destination.origin}
            AND scope IS NOT DISTINCT FROM ${destination.scope}
            AND credential_fingerprint IS NOT DISTINCT FROM ${destination.credentialFingerprint}
          ORDER BY dispatched_at
          LIMIT 1)
        ORDER BY "dispatchedAt"
        LIMIT 1`,
  );
  const row = rows[0];
  return row === undefined ? null : { ...row, destination };
}
