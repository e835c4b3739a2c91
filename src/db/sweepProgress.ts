// The sweep's high-water mark (migration 0013); why a complete sweep's mark can be trusted: docs/design.md §7.
import type { Database } from './pool';
import { runSql, sql } from './sql';

/** The overlap before the mark, for rows that commit late: at least the sweep's grace. */
export const SWEEP_OVERLAP_MS = 60 * 60 * 1000;

/** The earliest confirmed_at a batch reads: look-back start, go-live, or last mark less the overlap. */
export async function sweepNotBefore(
  db: Database,
  input: { namespace: string; graceMs: number; lookbackMs: number; confirmedSince: Date | null },
): Promise<Date> {
  const lookbackStart = Date.now() - input.lookbackMs;
  const resumeFrom = await sweepResumesFrom(db, input);
  return new Date(
    Math.max(
      lookbackStart,
      input.confirmedSince?.getTime() ?? lookbackStart,
      resumeFrom?.getTime() ?? lookbackStart,
    ),
  );
}

/** The first confirmed_at the next sweep must look at, or null to look at its whole window. */
export async function sweepResumesFrom(
  db: Database,
  input: { namespace: string; graceMs: number },
): Promise<Date | null> {
  const { rows } = await runSql<{ from: Date }>(
    db,
    sql`SELECT checked_through - make_interval(secs => ${Math.max(SWEEP_OVERLAP_MS, input.graceMs) / 1000}::double precision) AS "from"
          FROM order_mail_reconcile_progress WHERE namespace = ${input.namespace}`,
  );
  return rows[0]?.from ?? null;
}

/**
 * Called when a sweep has gone through to its end: every confirmed order older than the grace has been looked
 * at. The mark only moves forward.
 */
export async function advanceSweepProgress(
  db: Database,
  input: { namespace: string; graceMs: number },
): Promise<void> {
  const checkedThrough = sql`now() - make_interval(secs => ${input.graceMs / 1000}::double precision)`;
  await runSql(
    db,
    sql`INSERT INTO order_mail_reconcile_progress AS progress (namespace, checked_through)
        VALUES (${input.namespace}, ${checkedThrough})
        ON CONFLICT (namespace) DO UPDATE
          SET checked_through = GREATEST(progress.checked_through, EXCLUDED.checked_through), updated_at = now()`,
  );
}
