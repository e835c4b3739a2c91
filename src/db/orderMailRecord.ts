// The record: docs/design.md §4 rule 4. It carries out what src/shared/unknownOutcome.ts decided.
import type { MailOutcome } from '../shared/mailOutcome';
import { readMailLog, timeSinceKeyFirstDispatch, type MailLogState } from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql } from './sql';
import { record, recordAfterClaimLost, type RecordValues } from '../mailRow/statements';

export interface AttemptFacts {
  /** The row is still this attempt's, in 'sending'. */
  held: boolean;
  /** This attempt passed the dispatch fence: a request may have reached the provider. */
  dispatched: boolean;
  /** Since the first request under the order's current send key (Postgres's clock); null if none. */
  sinceKeyFirstDispatchMs: number | null;
}

/** What deciding an unknown outcome needs to know about the attempt, read from the row. */
export async function readAttemptFacts(
  db: Database,
  attempt: { orderId: string; claimToken: string; attempt: number },
): Promise<AttemptFacts> {
  const row = await readMailLog(db, attempt.orderId);
  const held =
    row !== null &&
    row.state === 'sending' &&
    row.claimToken === attempt.claimToken &&
    row.attempts === attempt.attempt;
  return {
    held,
    dispatched: held && row.dispatchedAt !== null,
    sinceKeyFirstDispatchMs: await timeSinceKeyFirstDispatch(db, attempt.orderId),
  };
}

/** What the record activity settles an attempt with (the statement's values). */
export type OutcomeToRecord = RecordValues;

export type RecordResult =
  | {
      kind: 'recorded';
      state: 'sent' | 'failed';
      outcome: MailOutcome;
      /** A retry (or someone settling the attempt first) had already settled it; this changed nothing. */
      alreadyRecorded: boolean;
      /** The attempt was settled otherwise than this answer says; the answer is kept as its late answer. */
      lateAnswerKept: boolean;
    }
  | { kind: 'claim-lost'; currentState: MailLogState | null; lateAnswerKept: boolean }
  /** The dispatch fence is not as the decision assumed (a stalled send passed it meanwhile): decide again. */
  | { kind: 'dispatch-changed' };

/**
 * Settles this attempt with its audit row in one statement; when it changes nothing, says why (already
 * settled, claim lost, or the fence changed), keeping a richer answer as the attempt's late answer.
 */
export async function recordOutcome(db: Database, input: OutcomeToRecord): Promise<RecordResult> {
  const settled = await record(db, input);
  if (settled) {
    return { kind: 'recorded', ...settled, alreadyRecorded: false, lateAnswerKept: false };
  }

  const row = await readMailLog(db, input.orderId);
  const ours = row !== null && row.claimToken === input.claimToken && row.attempts === input.attempt;
  if (ours && row.state === 'sending') return { kind: 'dispatch-changed' };
  if (ours) {
    const outcome = row.outcome as MailOutcome;
    const lateAnswerKept = outcome !== input.outcome && (await keepLateAnswer(db, input));
    const state = row.state as 'sent' | 'failed';
    return { kind: 'recorded', state, outcome, alreadyRecorded: true, lateAnswerKept };
  }
  return {
    kind: 'claim-lost',
    currentState: row?.state ?? null,
    lateAnswerKept: await keepLateAnswer(db, input),
  };
}

/** An answer after someone else settled the attempt: kept once as its late answer, never dropped. */
async function keepLateAnswer(db: Database, input: OutcomeToRecord): Promise<boolean> {
  if (input.outcome === 'unknown') return false;
  const { rowCount } = await runSql(
    db,
    sql`INSERT INTO order_mail_late_answers (order_id, attempt, outcome, provider_message_id, http_status, recorded_by)
        SELECT attempt.order_id, attempt.attempt, ${input.outcome}, ${input.providerMessageId},
               ${input.httpStatus}::int, ${input.recordedBy}
          FROM order_mail_attempts AS attempt
         WHERE attempt.order_id = ${input.orderId} AND attempt.attempt = ${input.attempt}
           AND attempt.claim_token = ${input.claimToken}
        ON CONFLICT (order_id, attempt) DO NOTHING`,
  );
  if (rowCount === 1) return true;
  // Whoever moved the row wrote no audit row for this attempt: this answer is the attempt's own outcome.
  return recordAfterClaimLost(db, input);
}
