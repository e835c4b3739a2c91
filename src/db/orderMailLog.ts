// Typed queries for order_mail_log and its audit table, order_mail_attempts (DESIGN.md §4).
// Every state change is ONE statement whose WHERE clause states its precondition (the fence), and callers
// look at what it returned instead of reading first and writing after.
import type { LogOutcome, MailOutcome, UnknownOutcomePolicy, UnknownSettlement } from '../shared/mailOutcome';
import type { Database } from './pool';

export type MailLogState = 'sending' | 'sent' | 'failed';

export interface MailLogRow {
  orderId: string;
  state: MailLogState;
  attempts: number;
  claimToken: string;
  claimedAt: Date;
  claimScheduledAt: Date | null;
  dispatchedAt: Date | null;
  outcome: LogOutcome | null;
  unknownPolicy: UnknownSettlement | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const ROW_COLUMNS = `order_id::text AS "orderId", state, attempts, claim_token AS "claimToken",
  claimed_at AS "claimedAt", claim_scheduled_at AS "claimScheduledAt", dispatched_at AS "dispatchedAt", outcome, unknown_policy AS "unknownPolicy",
  provider_message_id AS "providerMessageId", http_status AS "httpStatus", last_error AS "lastError",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Who claims: the run's token, and when Temporal scheduled its claim (orders runs of one workflow id). */
export interface Claimant {
  claimToken: string;
  claimScheduledAt: Date;
}

/**
 * The precondition every takeover shares: the row's holder is another run of the same workflow id whose claim
 * was scheduled before ours. Temporal keeps at most one run of a workflow id open, and runs follow each other in
 * time, so such a holder is a closed run; a NEWER holder is the open run, and a late claim from a closed run
 * must leave it alone.
 */
const HELD_BY_EARLIER_RUN_OF_SAME_WORKFLOW = `log.claim_token <> $2 AND starts_with(log.claim_token, $3)
          AND (log.claim_scheduled_at IS NULL OR log.claim_scheduled_at < $4)`;

export async function readMailLog(db: Database, orderId: string): Promise<MailLogRow | null> {
  const { rows } = await db.query<MailLogRow>(
    `SELECT ${ROW_COLUMNS} FROM order_mail_log WHERE order_id = $1`,
    [orderId],
  );
  return rows[0] ?? null;
}

/** First claim of an order. Returns the attempt number, or null when the order already has a row. */
export async function insertFirstClaim(
  db: Database,
  orderId: string,
  claimant: Claimant,
): Promise<number | null> {
  const { rows } = await db.query<{ attempts: number }>(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_scheduled_at)
     VALUES ($1, 'sending', 1, $2, $3)
     ON CONFLICT (order_id) DO NOTHING
     RETURNING attempts`,
    [orderId, claimant.claimToken, claimant.claimScheduledAt],
  );
  return rows[0]?.attempts ?? null;
}

/** Claims a row that ended definitely-not-sent (or was settled as failed by policy). Attempts + 1. */
export async function reclaimFailed(
  db: Database,
  orderId: string,
  claimant: Claimant,
): Promise<number | null> {
  const { rows } = await db.query<{ attempts: number }>(
    `UPDATE order_mail_log
        SET state = 'sending', attempts = attempts + 1, claim_token = $2, claim_scheduled_at = $3, claimed_at = now(),
            dispatched_at = NULL, outcome = NULL, unknown_policy = NULL, provider_message_id = NULL,
            http_status = NULL, last_error = NULL, updated_at = now()
      WHERE order_id = $1 AND state = 'failed'
        -- Only a claim scheduled after the one that failed: a late claim from a closed run must not revive a
        -- row the open run has settled (it would be left in 'sending' with nobody to send or record).
        AND (claim_scheduled_at IS NULL OR claim_scheduled_at < $3)
      RETURNING attempts`,
    [orderId, claimant.claimToken, claimant.claimScheduledAt],
  );
  return rows[0]?.attempts ?? null;
}

/**
 * Takes over a claim left by a closed run of the same workflow id that never dispatched (DESIGN.md §4 rule 3):
 * nothing reached the Mail API, so this run may send. The abandoned attempt gets its audit row.
 * `workflowScope` is '<namespace>/<workflow id>/': Temporal runs at most one open run per workflow id, so a
 * 'sending' row under another run of the same id belongs to a run that is closed (reset or terminated).
 */
export async function takeOverUndispatchedClaim(
  db: Database,
  input: Claimant & { orderId: string; workflowScope: string; recordedBy: string },
): Promise<number | null> {
  const { rows } = await db.query<{ attempts: number }>(
    `WITH taken AS (
       UPDATE order_mail_log AS log
          SET claim_token = $2, claim_scheduled_at = $4, attempts = log.attempts + 1, claimed_at = now(),
              updated_at = now()
         FROM (SELECT order_id, attempts, claim_token, claimed_at FROM order_mail_log
                WHERE order_id = $1 FOR UPDATE) AS previous
        WHERE log.order_id = $1 AND previous.order_id = log.order_id
          AND log.state = 'sending' AND log.dispatched_at IS NULL
          AND ${HELD_BY_EARLIER_RUN_OF_SAME_WORKFLOW}
       RETURNING log.attempts, previous.attempts AS previous_attempt, previous.claim_token AS previous_token,
                 previous.claimed_at AS previous_claimed_at
     ), audit AS (
       INSERT INTO order_mail_attempts (order_id, attempt, claim_token, claimed_at, dispatched_at, state, outcome,
                                        error, recorded_by)
       SELECT $1, previous_attempt, previous_token, previous_claimed_at, NULL, 'failed', 'not_sent',
              'the run holding this claim closed before dispatching; taken over by ' || $2, $5
         FROM taken
     )
     SELECT attempts FROM taken`,
    [input.orderId, input.claimToken, input.workflowScope, input.claimScheduledAt, input.recordedBy],
  );
  return rows[0]?.attempts ?? null;
}

/**
 * Settles a claim left by a closed run of the same workflow id that HAD dispatched: its outcome is unknown,
 * so the policy decides (DESIGN.md §4 rule 3), and the row and the audit trail say so.
 */
export async function settleDispatchedOrphan(
  db: Database,
  input: Claimant & {
    orderId: string;
    workflowScope: string;
    policy: UnknownOutcomePolicy;
    recordedBy: string;
  },
): Promise<{ state: 'sent' | 'failed'; orphanToken: string } | null> {
  const state = input.policy === 'assume-sent' ? 'sent' : 'failed';
  const { rows } = await db.query<{ state: 'sent' | 'failed'; orphanToken: string }>(
    `WITH settled AS (
       UPDATE order_mail_log AS log
          SET state = $5, outcome = 'unknown', unknown_policy = $6, updated_at = now(),
              last_error = 'the run holding this claim closed after dispatching; outcome unknown, settled by policy ' || $6
        WHERE log.order_id = $1 AND log.state = 'sending' AND log.dispatched_at IS NOT NULL
          AND ${HELD_BY_EARLIER_RUN_OF_SAME_WORKFLOW}
       RETURNING log.order_id, log.attempts, log.claim_token, log.claimed_at, log.dispatched_at, log.state,
                 log.last_error
     ), audit AS (
       INSERT INTO order_mail_attempts (order_id, attempt, claim_token, claimed_at, dispatched_at, state, outcome,
                                        unknown_policy, error, recorded_by)
       SELECT order_id, attempts, claim_token, claimed_at, dispatched_at, state, 'unknown', $6, last_error, $7
         FROM settled
     )
     SELECT state, claim_token AS "orphanToken" FROM settled`,
    [
      input.orderId,
      input.claimToken,
      input.workflowScope,
      input.claimScheduledAt,
      state,
      input.policy,
      input.recordedBy,
    ],
  );
  return rows[0] ?? null;
}

export type DispatchFenceResult = 'dispatched' | 'already-dispatched' | 'claim-lost';

/**
 * The dispatch fence (DESIGN.md §4 rule 2): marks this attempt as about to call the Mail API. Only the attempt
 * that holds the claim and has not dispatched yet gets 'dispatched'; everyone else must not make the request.
 */
export async function markDispatched(
  db: Database,
  input: { orderId: string; claimToken: string; attempt: number },
): Promise<DispatchFenceResult> {
  const { rowCount } = await db.query(
    `UPDATE order_mail_log SET dispatched_at = now(), updated_at = now()
      WHERE order_id = $1 AND claim_token = $2 AND attempts = $3 AND state = 'sending' AND dispatched_at IS NULL`,
    [input.orderId, input.claimToken, input.attempt],
  );
  if (rowCount === 1) return 'dispatched';
  // The fence said no. Only to report why: whatever this read sees, no request is made.
  const row = await readMailLog(db, input.orderId);
  const stillOurs =
    row !== null &&
    row.claimToken === input.claimToken &&
    row.attempts === input.attempt &&
    row.state === 'sending';
  return stillOurs ? 'already-dispatched' : 'claim-lost';
}

export interface OutcomeToRecord {
  orderId: string;
  claimToken: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownSettlement | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
  recordedBy: string;
}

export type RecordResult =
  | { kind: 'recorded'; state: 'sent' | 'failed'; outcome: MailOutcome; alreadyRecorded: boolean }
  | { kind: 'claim-lost'; currentState: MailLogState | null };

/**
 * Settles this attempt, fenced by (claim token, attempt) and idempotent: a retry after a lost commit finds its
 * own settled row and reports it. One truth is applied here rather than in the workflow: an "unknown" for an
 * attempt that never passed the dispatch fence (say, its worker died before the HTTP call) is recorded as
 * not_sent, because the row proves no request was made.
 */
export async function recordOutcome(db: Database, input: OutcomeToRecord): Promise<RecordResult> {
  const { rows } = await db.query<{ state: 'sent' | 'failed'; outcome: MailOutcome }>(
    `WITH settled AS (
       UPDATE order_mail_log AS log
          SET state = CASE WHEN $5 = 'unknown' AND log.dispatched_at IS NULL THEN 'failed' ELSE $4 END,
              outcome = CASE WHEN $5 = 'unknown' AND log.dispatched_at IS NULL THEN 'not_sent' ELSE $5 END,
              unknown_policy = CASE WHEN $5 = 'unknown' AND log.dispatched_at IS NOT NULL THEN $6 ELSE NULL END,
              provider_message_id = $7, http_status = $8,
              last_error = CASE WHEN $5 = 'unknown' AND log.dispatched_at IS NULL
                                THEN 'no request was made: the attempt ended before the dispatch fence'
                                     || COALESCE(' (' || $9 || ')', '')
                                ELSE $9 END,
              updated_at = now()
        WHERE log.order_id = $1 AND log.claim_token = $2 AND log.attempts = $3 AND log.state = 'sending'
       RETURNING log.order_id, log.attempts, log.claim_token, log.claimed_at, log.dispatched_at, log.state,
                 log.outcome, log.unknown_policy, log.provider_message_id, log.http_status, log.last_error
     ), audit AS (
       INSERT INTO order_mail_attempts (order_id, attempt, claim_token, claimed_at, dispatched_at, state, outcome,
                                        unknown_policy, provider_message_id, http_status, error, recorded_by)
       SELECT order_id, attempts, claim_token, claimed_at, dispatched_at, state, outcome, unknown_policy,
              provider_message_id, http_status, last_error, $10
         FROM settled
     )
     SELECT state, outcome FROM settled`,
    [
      input.orderId,
      input.claimToken,
      input.attempt,
      input.state,
      input.outcome,
      input.unknownPolicy,
      input.providerMessageId,
      input.httpStatus,
      input.error,
      input.recordedBy,
    ],
  );
  const settled = rows[0];
  if (settled)
    return { kind: 'recorded', state: settled.state, outcome: settled.outcome, alreadyRecorded: false };

  const row = await readMailLog(db, input.orderId);
  if (
    row &&
    row.claimToken === input.claimToken &&
    row.attempts === input.attempt &&
    row.state !== 'sending'
  ) {
    return { kind: 'recorded', state: row.state, outcome: row.outcome as MailOutcome, alreadyRecorded: true };
  }
  return { kind: 'claim-lost', currentState: row?.state ?? null };
}

export interface AttemptRow {
  attempt: number;
  claimToken: string;
  claimedAt: Date;
  dispatchedAt: Date | null;
  finishedAt: Date;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownSettlement | null;
  providerMessageId: string | null;
  httpStatus: number | null;
  error: string | null;
  recordedBy: string;
}

export async function listAttempts(db: Database, orderId: string): Promise<AttemptRow[]> {
  const { rows } = await db.query<AttemptRow>(
    `SELECT attempt, claim_token AS "claimToken", claimed_at AS "claimedAt", dispatched_at AS "dispatchedAt",
            finished_at AS "finishedAt", state, outcome, unknown_policy AS "unknownPolicy",
            provider_message_id AS "providerMessageId", http_status AS "httpStatus", error, recorded_by AS "recordedBy"
       FROM order_mail_attempts WHERE order_id = $1 ORDER BY attempt, id`,
    [orderId],
  );
  return rows;
}

/** What an operator lists: rows in a state, or whose outcome is unknown (whatever the policy made of it). */
export type MailLogFilter = 'sending' | 'sent' | 'failed' | 'unknown';

/** Rows matching `filter` updated since `since`, most recently updated first, at most `limit`. */
export async function listMailLog(
  db: Database,
  input: { filter: MailLogFilter; since: Date | null; limit: number },
): Promise<MailLogRow[]> {
  const { rows } = await db.query<MailLogRow>(
    `SELECT ${ROW_COLUMNS} FROM order_mail_log
      WHERE (CASE WHEN $1 = 'unknown' THEN outcome = 'unknown' ELSE state = $1 END)
        AND ($2::timestamptz IS NULL OR updated_at >= $2)
      ORDER BY updated_at DESC, order_id DESC
      LIMIT $3`,
    [input.filter, input.since, input.limit],
  );
  return rows;
}

/**
 * Rows in 'sending' not touched for `olderThanMs`, oldest first, at most `limit`: candidates for a claim whose
 * run closed without settling it (the reconciliation sweep asks Temporal about each).
 */
export async function listQuietSendingRows(
  db: Database,
  input: { olderThanMs: number; limit: number },
): Promise<MailLogRow[]> {
  const { rows } = await db.query<MailLogRow>(
    `SELECT ${ROW_COLUMNS} FROM order_mail_log
      WHERE state = 'sending' AND updated_at < now() - make_interval(secs => $1::double precision / 1000)
      ORDER BY updated_at, order_id
      LIMIT $2`,
    [input.olderThanMs, input.limit],
  );
  return rows;
}

/**
 * Milliseconds from the order's first dispatch to now, both on Postgres's clock: the earliest dispatched_at
 * of every attempt, earlier runs and resets included, and of the attempt in progress. Null when no attempt
 * ever dispatched. An idempotency key is the same for every attempt of an order, so the provider's window
 * counts, at the latest, from this first request that carried it.
 */
export async function timeSinceFirstDispatch(db: Database, orderId: string): Promise<number | null> {
  const { rows } = await db.query<{ elapsedMs: number | null }>(
    `SELECT round(extract(epoch FROM now() - LEAST(
              (SELECT dispatched_at FROM order_mail_log WHERE order_id = $1),
              (SELECT min(dispatched_at) FROM order_mail_attempts WHERE order_id = $1))) * 1000)::float8
              AS "elapsedMs"`,
    [orderId],
  );
  return rows[0]?.elapsedMs ?? null;
}
