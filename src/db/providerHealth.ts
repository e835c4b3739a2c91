// The providers' shared health (migration 0046): advisory, it steers only new attempts among those the
// failover rule allows (docs/design.md "Failover").
import type { OperatorMode, ProviderStanding } from '../shared/providerChoice';
import type { Database } from './pool';
import { runSql, sql } from './sql';

export interface HealthSettings {
  /** Failures in a row after which new attempts skip the provider (MAIL_PROVIDER_SKIP_AFTER_FAILURES). */
  skipAfterFailures: number;
  /** How long they skip it; then it gets new attempts again (MAIL_PROVIDER_SKIP_FOR_MS). */
  skipForMs: number;
}

export interface ProviderHealthRow {
  provider: string;
  consecutiveFailures: number;
  lastFailureAt: Date | null;
  lastFailure: string | null;
  lastSuccessAt: Date | null;
  skipUntil: Date | null;
  /** skip_until is still ahead, on Postgres's clock. */
  skippedNow: boolean;
  operatorMode: OperatorMode;
  operatorSetBy: string | null;
  operatorSetAt: Date | null;
}

const COLUMNS = sql`provider, consecutive_failures AS "consecutiveFailures", last_failure_at AS "lastFailureAt",
  last_failure AS "lastFailure", last_success_at AS "lastSuccessAt", skip_until AS "skipUntil",
  coalesce(skip_until > now(), false) AS "skippedNow", operator_mode AS "operatorMode",
  operator_set_by AS "operatorSetBy", operator_set_at AS "operatorSetAt"`;

export async function readProviderHealth(db: Database): Promise<ProviderHealthRow[]> {
  const { rows } = await runSql<ProviderHealthRow>(
    db,
    sql`SELECT ${COLUMNS} FROM order_mail_provider_health ORDER BY provider`,
  );
  return rows;
}

/** What the claim needs of it: who is pinned, skipped, or failing right now. */
export async function readProviderStandings(db: Database): Promise<ProviderStanding[]> {
  const rows = await readProviderHealth(db);
  return rows.map((row) => ({
    provider: row.provider,
    operatorMode: row.operatorMode,
    unhealthy: row.skippedNow,
  }));
}

/** A send that says the provider is not taking mail: counts up, and opens or extends the skip window. */
export async function countProviderFailure(
  db: Database,
  input: { provider: string; failure: string; settings: HealthSettings },
): Promise<{ consecutiveFailures: number; skipped: boolean }> {
  const { skipAfterFailures, skipForMs } = input.settings;
  const { rows } = await runSql<{ consecutiveFailures: number; skipped: boolean }>(
    db,
    sql`INSERT INTO order_mail_provider_health AS health (provider, consecutive_failures, last_failure_at, last_failure,
                                                       skip_until, updated_at)
        VALUES (${input.provider}, 1, now(), ${input.failure},
                CASE WHEN 1 >= ${skipAfterFailures}::int THEN now() + make_interval(secs => ${skipForMs}::int / 1000.0) END,
                now())
        ON CONFLICT (provider) DO UPDATE
           SET consecutive_failures = health.consecutive_failures + 1, last_failure_at = now(),
               last_failure = excluded.last_failure, updated_at = now(),
               skip_until = CASE WHEN health.consecutive_failures + 1 >= ${skipAfterFailures}::int
                                 THEN now() + make_interval(secs => ${skipForMs}::int / 1000.0)
                                 ELSE health.skip_until END
        RETURNING consecutive_failures AS "consecutiveFailures", coalesce(skip_until > now(), false) AS skipped`,
  );
  return rows[0]!;
}

/** The provider answered: the count restarts; written only on change, so healthy sends cost no write. */
export async function countProviderSuccess(db: Database, provider: string): Promise<void> {
  await runSql(
    db,
    sql`UPDATE order_mail_provider_health
           SET consecutive_failures = 0, skip_until = NULL, last_success_at = now(), updated_at = now()
         WHERE provider = ${provider} AND (consecutive_failures > 0 OR skip_until IS NOT NULL)`,
  );
}

/** An operator's pin, skip or auto (npm run ops -- provider). Pinning one unpins any other. */
export async function setProviderMode(
  db: Database,
  input: { provider: string; mode: OperatorMode; operator: string },
): Promise<void> {
  // One statement: the other pin (if any) is lifted with it, so two pins never hold at once.
  await runSql(
    db,
    sql`WITH unpinned AS (
          UPDATE order_mail_provider_health
             SET operator_mode = 'auto', operator_set_by = ${input.operator}, operator_set_at = now(), updated_at = now()
           WHERE ${input.mode} = 'pinned' AND operator_mode = 'pinned' AND provider <> ${input.provider}
        )
        INSERT INTO order_mail_provider_health AS health (provider, operator_mode, operator_set_by, operator_set_at)
        VALUES (${input.provider}, ${input.mode}, ${input.operator}, now())
        ON CONFLICT (provider) DO UPDATE
           SET operator_mode = excluded.operator_mode, operator_set_by = excluded.operator_set_by,
               operator_set_at = now(), updated_at = now()`,
  );
}

/** `provider auto` without a name: every provider back to automatic. */
export async function resetProviderModes(db: Database, operator: string): Promise<number> {
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_provider_health
           SET operator_mode = 'auto', operator_set_by = ${operator}, operator_set_at = now(), updated_at = now()
         WHERE operator_mode <> 'auto'`,
  );
  return rowCount;
}

/** The last hour's finished attempts by provider and outcome: what each provider did lately. */
export async function recentAttemptsByProvider(
  db: Database,
): Promise<{ provider: string | null; outcome: string; attempts: number }[]> {
  const { rows } = await runSql<{ provider: string | null; outcome: string; attempts: number }>(
    db,
    sql`SELECT provider, outcome, count(*)::int AS attempts FROM order_mail_attempts
         WHERE finished_at > now() - interval '1 hour'
         GROUP BY provider, outcome ORDER BY provider, outcome`,
  );
  return rows;
}
