// The freshness witness's query (src/evidence/freshnessCheck.ts): the earliest send we KNOW was accepted (its
// attempt got a 2xx, recorded as sent by its own answer, not verified, not assumed by a policy), dispatched to
// the same destination at or after the attempt asked about. The log row keeps its attempt's dispatch facts
// (migration 0015) once it is sent, so one row is one candidate.
import type { SendDestination } from '../evidence/destination';
import type { WitnessSend } from '../evidence/freshnessCheck';
import type { Database } from './pool';
import { runSql, sql } from './sql';

export async function findWitnessCandidate(
  db: Database,
  input: { orderId: string; dispatchedAt: Date; destination: SendDestination },
): Promise<WitnessSend | null> {
  const { destination } = input;
  const { rows } = await runSql<{ orderId: string; sendKey: string; dispatchedAt: Date }>(
    db,
    sql`SELECT order_id::text AS "orderId", dispatch_send_key AS "sendKey", dispatched_at AS "dispatchedAt"
          FROM order_mail_log
         WHERE state = 'sent' AND outcome = 'accepted' AND verification IS NULL
           AND http_status BETWEEN 200 AND 299
           AND dispatched_at >= ${input.dispatchedAt}
           AND order_id <> ${input.orderId}
           AND dispatch_send_key IS NOT NULL
           AND dispatch_provider = ${destination.provider}
           AND dispatch_origin = ${destination.origin}
           AND dispatch_scope IS NOT DISTINCT FROM ${destination.scope}
           AND dispatch_credential_fingerprint IS NOT DISTINCT FROM ${destination.credentialFingerprint}
         ORDER BY dispatched_at
         LIMIT 1`,
  );
  const row = rows[0];
  return row === undefined ? null : { ...row, destination };
}
