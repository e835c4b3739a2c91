// What is still bound to each provider (docs/providers.md#draining-a-provider): a provider may leave
// MAIL_PROVIDERS only when none of its attempts can still need it. Read by the worker's start-up check and by
// `npm run ops -- provider status`.
import type { Database } from './pool';
import { runSql, sql } from './sql';

/**
 * Open rows bound to one provider: `sending` (an attempt in flight, or a closed run's to settle there), and
 * `failed` rows whose attempt under the current key may have reached it (any outcome but not_sent), which
 * the failover rule keeps there (src/shared/providerChoice.ts).
 */
export interface OpenRowsOfProvider {
  provider: string;
  sending: number;
  failedBound: number;
}

/** Every provider with open rows bound to it; rows from before migration 0045 (no provider) are left out. */
export async function countOpenRowsByProvider(db: Database): Promise<OpenRowsOfProvider[]> {
  const { rows } = await runSql<OpenRowsOfProvider>(
    db,
    sql`SELECT log.provider,
               count(*) FILTER (WHERE log.state = 'sending')::int AS sending,
               count(*) FILTER (WHERE log.state = 'failed')::int AS "failedBound"
          FROM order_mail_log AS log
         WHERE log.provider IS NOT NULL
           AND (log.state = 'sending'
                OR (log.state = 'failed' AND EXISTS (
                      SELECT 1 FROM order_mail_attempts AS attempt
                       WHERE attempt.order_id = log.order_id AND attempt.resend_count = log.resend_count
                         AND attempt.provider = log.provider AND attempt.outcome <> 'not_sent')))
         GROUP BY log.provider
         ORDER BY log.provider`,
  );
  return rows;
}

/**
 * Attempts at `provider` whose unknown outcome a policy settled (assume-sent, assume-failed) and that were
 * dispatched after `since` (now less the lookup's retention): the provider's lookup may still answer for them,
 * late, with its settings.
 */
export async function countPolicySettledSince(db: Database, provider: string, since: Date): Promise<number> {
  const { rows } = await runSql<{ attempts: number }>(
    db,
    sql`SELECT count(*)::int AS attempts FROM order_mail_attempts
         WHERE provider = ${provider} AND outcome = 'unknown'
           AND unknown_policy IN ('assume-sent', 'assume-failed')
           AND dispatched_at > ${since}`,
  );
  return rows[0]?.attempts ?? 0;
}

export class ProvidersStillBoundError extends Error {
  override readonly name = 'ProvidersStillBoundError';
  readonly code = 'ERR_PROVIDERS_STILL_BOUND';
}

/**
 * A worker's start-up check: open rows bound to a provider it is not configured for would fail at once
 * (ProviderNotConfigured) on this worker, and only a worker with that provider can finish them. Throws
 * ProvidersStillBoundError naming each provider and its count, unless `forceStartReason` is given; then the
 * rows are returned for the caller to log with the reason. Empty when nothing is bound elsewhere.
 */
export async function checkNoRowsBoundElsewhere(
  db: Database,
  configured: readonly string[],
  forceStartReason: string | null,
): Promise<OpenRowsOfProvider[]> {
  // A worker that names no provider (a fake transport) binds nothing and can strand nothing.
  if (configured.length === 0) return [];
  const elsewhere = (await countOpenRowsByProvider(db)).filter(
    (entry) => !configured.includes(entry.provider),
  );
  if (elsewhere.length === 0 || forceStartReason !== null) return elsewhere;
  const counts = elsewhere.map(
    (entry) =>
      `${entry.provider}: ${entry.sending + entry.failedBound} open row(s) (${entry.sending} sending, ` +
      `${entry.failedBound} failed and bound to it)`,
  );
  throw new ProvidersStillBoundError(
    `Open rows are bound to provider(s) not in this worker's MAIL_PROVIDERS (${configured.join(', ')}): ` +
      `${counts.join('; ')}. This worker would fail those orders at once. Keep each provider in MAIL_PROVIDERS ` +
      'with MAIL_PROVIDERS_DRAINING until npm run ops -- provider status shows nothing bound to it ' +
      '(docs/operating.md#draining-a-provider), or set MAIL_PROVIDERS_FORCE_START_REASON to start anyway.',
  );
}
