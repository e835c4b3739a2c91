// What is still bound to each provider (docs/providers.md#draining-a-provider), for the start-up check and
// `ops provider status`.
import { whyCannotAsk, type SendDestination } from '../evidence/destination';
import type { Database } from './pool';
import { runSql, sql } from './sql';

/** Open rows bound to a provider: `sending`, and `failed` ones the failover rule keeps there. */
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

/** Policy-settled unknowns at `provider` dispatched after `since`, which its lookup may still answer for. */
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
 * Start-up check: rows bound to a provider this worker lacks. Throws ProvidersStillBoundError unless
 * `forceStartReason` is given; then returns them for the caller to log.
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

/** Open rows bound to a provider this worker has, but to another destination of it than the worker's. */
export interface OpenRowsAtAnotherDestination {
  provider: string;
  rows: number;
  /** Why this worker could not ask where they went (whyCannotAsk), for the first such destination. */
  why: string;
}

/**
 * Start-up check: open rows dispatched to a provider whose destination changed can be verified only at the
 * old one. Throws ProvidersStillBoundError unless `forceStartReason` is given; then returns them.
 */
export async function checkNoRowsBoundToAnotherDestination(
  db: Database,
  destinations: readonly SendDestination[],
  forceStartReason: string | null,
): Promise<OpenRowsAtAnotherDestination[]> {
  if (destinations.length === 0) return [];
  const { rows } = await runSql<{
    provider: string;
    origin: string | null;
    scope: string | null;
    credentialFingerprint: string | null;
    account: string | null;
    rows: number;
  }>(
    db,
    sql`SELECT log.dispatch_provider AS provider, log.dispatch_origin AS origin, log.dispatch_scope AS scope,
               log.dispatch_credential_fingerprint AS "credentialFingerprint", log.dispatch_account AS account,
               count(*)::int AS rows
          FROM order_mail_log AS log
         WHERE log.dispatch_provider IS NOT NULL AND log.dispatched_at IS NOT NULL
           AND (log.state = 'sending'
                OR (log.state = 'failed' AND EXISTS (
                      SELECT 1 FROM order_mail_attempts AS attempt
                       WHERE attempt.order_id = log.order_id AND attempt.resend_count = log.resend_count
                         AND attempt.provider = log.provider AND attempt.outcome <> 'not_sent')))
         GROUP BY 1, 2, 3, 4, 5
         ORDER BY 1`,
  );
  const found = new Map<string, OpenRowsAtAnotherDestination>();
  for (const row of rows) {
    const asking = destinations.find((destination) => destination.provider === row.provider);
    // A provider the worker lacks is checkNoRowsBoundElsewhere's.
    if (asking === undefined) continue;
    const why = whyCannotAsk(
      {
        provider: row.provider,
        origin: row.origin ?? '',
        scope: row.scope,
        credentialFingerprint: row.credentialFingerprint,
        account: row.account,
      },
      asking,
    );
    if (why === null) continue;
    const entry = found.get(row.provider) ?? { provider: row.provider, rows: 0, why };
    entry.rows += row.rows;
    found.set(row.provider, entry);
  }
  const other = [...found.values()];
  if (other.length === 0 || forceStartReason !== null) return other;
  throw new ProvidersStillBoundError(
    'Open rows are bound to another destination of a provider than this worker is configured for: ' +
      `${other.map((entry) => `${entry.provider}: ${entry.rows} open row(s); ${entry.why}`).join(' | ')}. ` +
      'A changed key, domain, stream, configuration set, account or base URL is a new destination: keep the ' +
      'old settings, with the provider in MAIL_PROVIDERS_DRAINING, until npm run ops -- provider status shows ' +
      'nothing bound to it (docs/operating.md#draining-a-provider), or set MAIL_PROVIDERS_FORCE_START_REASON ' +
      'to start anyway.',
  );
}
