// Witness probes' fence and answer (migration 0058): under a per-destination advisory lock the rate limit and
// "one probe serves every pending unknown" hold across workers (docs/providers.md, witness probes).
import type { SendDestination } from '../evidence/destination';
import type { MailOutcome } from '../shared/mailOutcome';
import type { Database } from './pool';
import { buildSql, runSql, sql } from './sql';

export interface ProbeDispatch {
  probeId: string;
  sendKey: string;
  destination: SendDestination;
  /** How long after its fence the request may still be under way (the transport's deadline). */
  sendTimeoutMs: number;
  workerIdentity: string;
}

/**
 * The probe's fence: 'passed' (recorded, dispatched_at = now()), 'early' before `notBefore` (it would prove
 * nothing about the attempt), or 'rate-limited' (another probe left within `intervalMs`).
 */
export async function passProbeFence(
  db: Database,
  input: { probe: ProbeDispatch; intervalMs: number; notBefore?: Date },
): Promise<'passed' | 'early' | 'rate-limited'> {
  const { probe, intervalMs } = input;
  const { destination } = probe;
  return db.transaction(async (client) => {
    // Two workers probing one destination at once: the second waits here and then sees the first's row.
    const lock = buildSql(
      sql`SELECT pg_advisory_xact_lock(hashtextextended(${`order_mail_witness_probe ${destinationKey(destination)}`}, 0))`,
    );
    await client.query(lock.text, lock.values);
    if (input.notBefore !== undefined) {
      const early = buildSql(sql`SELECT now() < ${input.notBefore} AS early`);
      const { rows } = await client.query<{ early: boolean }>(early.text, early.values);
      if (rows[0]?.early === true) return 'early';
    }
    const insert = buildSql(
      sql`INSERT INTO order_mail_witness_probes
                 (probe_id, send_key, provider, origin, scope, credential_fingerprint, send_timeout_ms,
                  worker_identity)
          SELECT ${probe.probeId}, ${probe.sendKey}, ${destination.provider}, ${destination.origin},
                 ${destination.scope}, ${destination.credentialFingerprint}, ${Math.ceil(probe.sendTimeoutMs)},
                 ${probe.workerIdentity}
           WHERE NOT EXISTS (
                 SELECT FROM order_mail_witness_probes
                  WHERE provider = ${destination.provider} AND origin = ${destination.origin}
                    AND scope IS NOT DISTINCT FROM ${destination.scope}
                    AND credential_fingerprint IS NOT DISTINCT FROM ${destination.credentialFingerprint}
                    AND dispatched_at > now() - ${intervalMs} * interval '1 millisecond')`,
    );
    const { rowCount } = await client.query(insert.text, insert.values);
    return rowCount === 1 ? 'passed' : 'rate-limited';
  });
}

/** How long until `at` on Postgres's clock (0 once it has passed): the fence's clock, so a probe waits it out. */
export async function millisecondsUntil(db: Database, at: Date): Promise<number> {
  const { rows } = await runSql<{ ms: number }>(
    db,
    sql`SELECT greatest(0, extract(epoch FROM (${at}::timestamptz - now())) * 1000)::float8 AS ms`,
  );
  return Math.ceil(rows[0]?.ms ?? 0);
}

/** The probe's answer, written once (the table's trigger refuses a second). */
export async function recordProbeAnswer(
  db: Database,
  input: { probeId: string; outcome: MailOutcome; httpStatus: number | null; errorCode: string | null },
): Promise<void> {
  await runSql(
    db,
    sql`UPDATE order_mail_witness_probes
           SET outcome = ${input.outcome}, http_status = ${input.httpStatus}, error_code = ${input.errorCode}
         WHERE probe_id = ${input.probeId} AND outcome IS NULL`,
  );
}

/** One string per destination: the advisory lock's, and the key of a worker's probes under way. */
export function destinationKey(destination: SendDestination): string {
  return JSON.stringify([
    destination.provider,
    destination.origin,
    destination.scope,
    destination.credentialFingerprint,
  ]);
}
