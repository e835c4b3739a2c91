// THE RECORD (docs: the row's state machine, rule 4): settles one attempt in the log, fenced by
// (claim token, attempt), idempotent on retry, and never dropping an answer it was given. What an unknown
// outcome becomes is decided before this, by src/shared/unknownOutcome.ts; the statement carries it out.
import type { MailOutcome, UnknownSettlement } from '../shared/mailOutcome';
import type { VerificationRecord } from '../shared/unknownOutcome';
import { readMailLog, timeSinceKeyFirstDispatch, type MailLogState } from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql } from './sql';
import { TEMPLATE_OF_SETTLED } from './transitionFence';

export interface AttemptFacts {
  /** The row is still this attempt's, in 'sending'. */
  held: boolean;
  /** This attempt passed the dispatch fence: a request may have reached the provider. */
  dispatched: boolean;
  /** Since the first request under the order's current idempotency key (Postgres's clock); null if none. */
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

export interface OutcomeToRecord {
  orderId: string;
  claimToken: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownSettlement | null;
  /**
   * How an unknown outcome was verified with the provider: decided by a lookup or a webhook, or tried in vain;
   * absent (null) when it was not.
   */
  verification?: VerificationRecord | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
  recordedBy: string;
  /**
   * What the decision took for granted about the dispatch fence (an unknown outcome's decision depends on it);
   * null when nothing depends on it. The statement changes nothing when the row says otherwise.
   */
  expectDispatched: boolean | null;
}

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
 * Settles this attempt with its audit row in one statement. When it changes nothing, says why: already
 * settled (a retry after a lost commit, or someone settled it first), claim lost (the row is someone else's
 * now), or the dispatch fence changed. In the first two cases an answer that says more than the row (an
 * accepted mail with its message id, a rejection) is kept in the attempt's audit row as its late answer.
 */
export async function recordOutcome(db: Database, input: OutcomeToRecord): Promise<RecordResult> {
  const dispatchedAsExpected =
    input.expectDispatched === null
      ? sql`TRUE`
      : sql`(log.dispatched_at IS NOT NULL) = ${input.expectDispatched}`;
  const { rows } = await runSql<{ state: 'sent' | 'failed'; outcome: MailOutcome }>(
    db,
    sql`WITH settled AS (
          UPDATE order_mail_log AS log
             SET state = ${input.state}, outcome = ${input.outcome}, unknown_policy = ${input.unknownPolicy},
                 verification = ${input.verification ?? null},
                 provider_message_id = ${input.providerMessageId}, http_status = ${input.httpStatus}::int,
                 last_error = ${input.error}, updated_at = now()
           WHERE log.order_id = ${input.orderId} AND log.claim_token = ${input.claimToken}
             AND log.attempts = ${input.attempt} AND log.state = 'sending' AND ${dispatchedAsExpected}
          RETURNING log.*
        ), audit AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, unknown_policy, verification, provider_message_id,
                                           http_status, error, recorded_by, provider, provider_choice,
                                           template_name, template_sha256)
          SELECT order_id, attempts, claim_token, resend_count, claimed_at, dispatched_at, state, outcome,
                 unknown_policy, verification, provider_message_id, http_status, last_error, ${input.recordedBy},
                 provider, provider_choice, ${TEMPLATE_OF_SETTLED}
            FROM settled
        )
        SELECT state, outcome FROM settled`,
  );
  const settled = rows[0];
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

/**
 * An answer that arrived after someone else had settled the attempt (an operator's resolve, a newer run's
 * claim, the sweep). The row is not ours to change; the attempt's late answer (order_mail_late_answers, append
 * only) keeps it once (the first late answer wins), so no provider message id is ever dropped. An unknown
 * adds nothing.
 */
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
  const { rowCount: inserted } = await runSql(
    db,
    sql`INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                         provider_message_id, http_status, error, recorded_by, provider, provider_choice)
        SELECT ${input.orderId}, ${input.attempt}, ${input.claimToken}, log.resend_count, log.claimed_at,
               ${input.state}, ${input.outcome}, ${input.providerMessageId}, ${input.httpStatus}::int,
               ${`recorded after the claim was lost; the log row was not changed${input.error === null ? '' : `: ${input.error}`}`},
               ${input.recordedBy}, NULL, NULL
          FROM order_mail_log AS log WHERE log.order_id = ${input.orderId}
        ON CONFLICT (order_id, attempt) DO NOTHING`,
  );
  return inserted === 1;
}
