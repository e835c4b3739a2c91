// `npm run prune`: deletes the audit trail of old mails settled as sent, never a log row; why only those:
// docs/operating.md "Retention", the batch's race: docs/design.md §4 "The prune".
import type { Database } from '../db/pool';
import { pruneHistory, PROVIDER_EVENTS_TABLE } from '../mailRow/statements';

export const DAY_MS = 24 * 60 * 60 * 1000;
/** Shorter retention is refused: it would prune what an operator still looks at (the sweep's look-back is 7 d). */
const MIN_RETENTION_MS = 7 * DAY_MS;
export const DEFAULT_PRUNE_BATCH_SIZE = 1_000;

export interface PruneRequest {
  /** Audit rows older than this, of mails last touched before then, go. */
  olderThanMs: number;
  /** Log rows per statement: each batch is one short transaction. */
  batchSize: number;
  /** Count what would go, delete nothing. */
  dryRun: boolean;
  /** The time the cutoff is measured from; default Postgres's now(). */
  now?: Date;
  /** Called after each batch, for progress. */
  progress?: (done: PruneResult) => void;
}

export interface PruneResult {
  cutoff: Date;
  dryRun: boolean;
  /** Settled-as-sent log rows older than the cutoff that were looked at. */
  logRowsExamined: number;
  attemptsDeleted: number;
  /** Answers that came after their attempt was settled: they go with their attempt. */
  lateAnswersDeleted: number;
  /** null when the provider-events table does not exist in this database. */
  providerEventsDeleted: number | null;
  batches: number;
}

export class PruneRefusedError extends Error {
  override readonly name = 'PruneRefusedError';
  readonly code = 'ERR_PRUNE_REFUSED';
}

export async function pruneOrderMailHistory(db: Database, request: PruneRequest): Promise<PruneResult> {
  if (!(request.olderThanMs >= MIN_RETENTION_MS)) {
    throw new PruneRefusedError(
      `--older-than must be at least ${MIN_RETENTION_MS / DAY_MS} days; nothing was deleted.`,
    );
  }
  if (!Number.isInteger(request.batchSize) || request.batchSize < 1) {
    throw new PruneRefusedError('--batch-size must be a positive whole number; nothing was deleted.');
  }
  const { rows: clock } = await db.query<{ cutoff: Date; events: boolean }>(
    `SELECT COALESCE($1::timestamptz, now()) - make_interval(secs => $2::double precision / 1000) AS cutoff,
            to_regclass($3) IS NOT NULL AS events`,
    [request.now ?? null, request.olderThanMs, PROVIDER_EVENTS_TABLE],
  );
  const { cutoff, events } = clock[0]!;
  const result: PruneResult = {
    cutoff,
    dryRun: request.dryRun,
    logRowsExamined: 0,
    attemptsDeleted: 0,
    lateAnswersDeleted: 0,
    providerEventsDeleted: events ? 0 : null,
    batches: 0,
  };
  // Keyset over (updated_at, order_id) of the old settled-as-sent rows, by the (state, updated_at) index:
  // each row is looked at once per run, however many batches it takes.
  let cursor: { updatedAt: string; orderId: string } | null = null;
  for (;;) {
    const batch = await pruneHistory(db, {
      cutoff,
      cursor,
      batchSize: request.batchSize,
      dryRun: request.dryRun,
      withEvents: events,
    });
    if (batch.examined === 0 || batch.lastUpdatedAt === null || batch.lastOrderId === null) break;
    result.batches += 1;
    result.logRowsExamined += batch.examined;
    result.attemptsDeleted += batch.attempts;
    result.lateAnswersDeleted += batch.lateAnswers;
    if (result.providerEventsDeleted !== null) result.providerEventsDeleted += batch.events;
    request.progress?.(result);
    cursor = { updatedAt: batch.lastUpdatedAt, orderId: batch.lastOrderId };
    // A short batch was the last one (SKIP LOCKED skips a row being changed, and LIMIT still fills up).
    if (batch.examined < request.batchSize) break;
  }
  return result;
}

/** '90d', '72h' → milliseconds; null for anything else. */
export function parseRetention(text: string): number | null {
  const match = /^(\d+)\s*(d|h)$/.exec(text.trim());
  if (match === null) return null;
  const amount = Number(match[1]);
  return amount * (match[2] === 'd' ? DAY_MS : 60 * 60 * 1000);
}
