// Typed queries for operators' acts (npm run ops -- retry|resolve) and their audit table,
// order_mail_operator_acts. Like every state change, resolve is ONE statement fenced on what the operator saw.
// Resolving as failed is the deliberate "it did not arrive, send it again": it bumps the row's resend count,
// so the next claim's request carries a new idempotency key (src/mail/idempotencyKey.ts) and really sends.
// Who acted is the session's login, set by the database (migration 0057), never a name the caller passes.
import { randomUUID } from 'node:crypto';
import type { LogOutcome } from '../shared/mailOutcome';
import type { MailLogState } from './orderMailLog';
import type { Database } from './pool';
import { buildSql, runSql, sql } from './sql';

/** 'reset': a reset made outside the ops CLI, as recorded before 0057; now order_mail_observed_resets. */
export type OperatorActKind = 'retry' | 'resolve' | 'reset';

/** The log row as an act saw it, kept in the audit table (no personal data: the row holds none). */
export interface MailLogSnapshot {
  state: MailLogState;
  outcome: LogOutcome | null;
  attempts: number;
  claim_token: string;
  dispatched_at: string | null;
  last_error: string | null;
  updated_at: string;
  [column: string]: unknown;
}

export interface OperatorActRow {
  id: string;
  orderId: string;
  act: OperatorActKind;
  /**
   * The login the act was written with (0057); on acts from before it, the name the CLI was told (and on a
   * 'reset', Temporal's identity).
   */
  operator: string;
  /** The database role the act was written with (set by the database); null on acts from before 0011. */
  dbSessionUser: string | null;
  actedAt: Date;
  reason: string;
  rowBefore: MailLogSnapshot | null;
  rowAfter: MailLogSnapshot | null;
  details: Record<string, unknown>;
}

const ACT_COLUMNS = sql`id::text AS id, order_id::text AS "orderId", act, operator, db_session_user AS "dbSessionUser",
  acted_at AS "actedAt", reason,
  row_before AS "rowBefore", row_after AS "rowAfter", details`;

export interface ResolveInput {
  orderId: string;
  as: 'sent' | 'failed';
  reason: string;
  /** The row as the operator's tool read it; the statement changes nothing if it is no longer so. */
  seen: { state: MailLogState; attempts: number; claimToken: string; dispatched: boolean };
}

/**
 * Settles the row by an operator's word: state `as`, outcome 'resolved', and a claim token of the operator's,
 * so a run still holding the old claim can neither dispatch nor record (its fence is (token, attempts)) and
 * stops (ClaimLost). An attempt cut off in 'sending' gets its audit row here, since its run never records
 * it. The act is written in the same statement. Returns null, having changed nothing, when the row is not as
 * seen, including when its attempt passed the dispatch fence meanwhile (the caller refuses a dispatched send
 * of an open run, and this keeps a send that dispatches between its look and this statement out of reach).
 */
export async function resolveMailLog(db: Database, input: ResolveInput): Promise<OperatorActRow | null> {
  const { seen } = input;
  const resend = input.as === 'failed' ? 1 : 0;
  const cutOffOutcome = seen.dispatched ? 'unknown' : 'not_sent';
  const cutOffNote = `while in flight (resolved as ${input.as}): ${input.reason}`;
  const { rows } = await runSql<OperatorActRow>(
    db,
    sql`WITH resolved AS (
          UPDATE order_mail_log AS log
             SET state = ${input.as}, outcome = 'resolved', unknown_policy = NULL, verification = NULL,
                 -- Never a prefix of a run's token ('<namespace>/<workflow id>/<run id>'): no run takes it for its own.
                 claim_token = ${`operator:${randomUUID()}`}, resend_count = log.resend_count + ${resend}::int,
                 last_error = ${`resolved as ${input.as} by `}::text || session_user || ${`: ${input.reason}`}::text,
                 updated_at = now()
            FROM (SELECT * FROM order_mail_log WHERE order_id = ${input.orderId} FOR UPDATE) AS previous
           WHERE log.order_id = ${input.orderId} AND previous.order_id = log.order_id
             AND log.state = ${seen.state} AND log.attempts = ${seen.attempts} AND log.claim_token = ${seen.claimToken}
             AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}
          RETURNING to_jsonb(previous) AS before, to_jsonb(log) AS after
        ), cut_off AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, error, recorded_by, provider, provider_choice,
                                           template_name, template_sha256)
          SELECT ${input.orderId}, (before->>'attempts')::int, before->>'claim_token', (before->>'resend_count')::int,
                 (before->>'claimed_at')::timestamptz, (before->>'dispatched_at')::timestamptz, ${input.as},
                 ${cutOffOutcome}, 'ended by operator ' || session_user || ' ' || ${cutOffNote}::text,
                 'operator:' || session_user, before->>'provider',
                 before->>'provider_choice',
                 CASE WHEN before->>'dispatched_at' IS NOT NULL THEN before->>'dispatch_template_name' END,
                 CASE WHEN before->>'dispatched_at' IS NOT NULL THEN before->>'dispatch_template_sha256' END
            FROM resolved WHERE before->>'state' = 'sending'
        )
        INSERT INTO order_mail_operator_acts (order_id, act, reason, row_before, row_after)
        SELECT ${input.orderId}, 'resolve', ${input.reason}, before, after FROM resolved
        RETURNING ${ACT_COLUMNS}`,
  );
  return rows[0] ?? null;
}

/** Writes the audit row of a retry (a reset, or a start past retention), after Temporal accepted it. */
export async function insertRetryAct(
  db: Database,
  input: {
    orderId: string;
    reason: string;
    rowBefore: MailLogSnapshot | null;
    details: Record<string, unknown>;
  },
): Promise<OperatorActRow> {
  const { rows } = await db.query<OperatorActRow>(
    `INSERT INTO order_mail_operator_acts (order_id, act, reason, row_before, details)
     VALUES ($1, 'retry', $2, $3, $4)
     RETURNING ${buildSql(ACT_COLUMNS).text}`,
    [input.orderId, input.reason, input.rowBefore, input.details],
  );
  return rows[0]!;
}

/** The row as JSON, as the audit table keeps it. */
export async function snapshotMailLog(db: Database, orderId: string): Promise<MailLogSnapshot | null> {
  const { rows } = await db.query<{ snapshot: MailLogSnapshot }>(
    `SELECT to_jsonb(log) AS snapshot FROM order_mail_log AS log WHERE order_id = $1`,
    [orderId],
  );
  return rows[0]?.snapshot ?? null;
}

export async function listOperatorActs(db: Database, orderId: string): Promise<OperatorActRow[]> {
  const { rows } = await db.query<OperatorActRow>(
    `SELECT ${buildSql(ACT_COLUMNS).text} FROM order_mail_operator_acts WHERE order_id = $1 ORDER BY acted_at, id`,
    [orderId],
  );
  return rows;
}

/**
 * Whether a run's claim found the row last claimed by ANOTHER run of its workflow id (or that run's attempts
 * in the audit trail), with no act recorded yet for this run and no attempt of its own recorded: then this is
 * the run's first claim (or a retry of it) and the run may have been started by a reset. A later claim of the
 * same run (after a backoff) was not started by anything new, and must not depend on reaching Temporal: a
 * worker cut off from Temporal with a late claim on the wire would otherwise hang that claim on a history
 * read (test/chaos/workerClocksApart.test.ts). Cheap, and asked only by claims other than an order's first.
 */
export async function followsAnotherRunUnrecorded(
  db: Database,
  input: { orderId: string; workflowScope: string; claimToken: string; runId: string },
): Promise<boolean> {
  const { rows } = await runSql<{ follows: boolean }>(
    db,
    sql`SELECT (EXISTS (SELECT 1 FROM order_mail_log
                         WHERE order_id = ${input.orderId} AND claim_token <> ${input.claimToken}
                           AND left(claim_token, length(${input.workflowScope})) = ${input.workflowScope})
             OR EXISTS (SELECT 1 FROM order_mail_attempts
                         WHERE order_id = ${input.orderId} AND claim_token <> ${input.claimToken}
                           AND left(claim_token, length(${input.workflowScope})) = ${input.workflowScope}))
           AND NOT EXISTS (SELECT 1 FROM order_mail_attempts
                            WHERE order_id = ${input.orderId} AND claim_token = ${input.claimToken})
           AND NOT EXISTS (SELECT 1 FROM order_mail_operator_acts
                            WHERE order_id = ${input.orderId}
                              AND (details ->> 'newRunId' = ${input.runId}
                                   OR details -> 'reset' ->> 'newRunId' = ${input.runId}))
           AND NOT EXISTS (SELECT 1 FROM order_mail_observed_resets
                            WHERE order_id = ${input.orderId} AND new_run_id = ${input.runId}) AS follows`,
  );
  return rows[0]?.follows === true;
}

export interface ObservedResetRow {
  id: string;
  orderId: string;
  newRunId: string;
  baseRunId: string;
  reason: string;
  /** The identity Temporal's history gives the reset (its own, e.g. "history-service"; not the requester's). */
  temporalIdentity: string;
  resetEventId: string | null;
  resetAt: Date | null;
  baseRunTerminated: { reason: string; identity: string } | null;
  /** The database login that wrote the row (set by the database): a worker's. */
  recordedBy: string;
  /** The Temporal identity of the worker whose claim saw the reset. */
  workerIdentity: string | null;
  observedAt: Date;
  rowAfter: MailLogSnapshot | null;
}

const OBSERVED_COLUMNS = sql`id::text AS id, order_id::text AS "orderId", new_run_id AS "newRunId",
  base_run_id AS "baseRunId", reason, temporal_identity AS "temporalIdentity",
  reset_event_id::text AS "resetEventId", reset_at AS "resetAt", base_run_terminated AS "baseRunTerminated",
  recorded_by AS "recordedBy", worker_identity AS "workerIdentity", observed_at AS "observedAt",
  row_after AS "rowAfter"`;

/**
 * A reset made outside the ops CLI (the Web UI, `temporal workflow reset`) as a worker observed it in Temporal's
 * history: its reason and Temporal's identity, under the worker's own login (migration 0057): an observation,
 * not an operator's act. Once per run (a unique key); null when it was there.
 */
export async function insertObservedReset(
  db: Database,
  input: {
    orderId: string;
    newRunId: string;
    baseRunId: string;
    reason: string;
    temporalIdentity: string;
    resetEventId: number | null;
    resetAt: string | null;
    baseRunTerminated: { reason: string; identity: string } | null;
    workerIdentity: string | null;
    rowAfter: MailLogSnapshot | null;
  },
): Promise<ObservedResetRow | null> {
  const { rows } = await runSql<ObservedResetRow>(
    db,
    sql`INSERT INTO order_mail_observed_resets (order_id, new_run_id, base_run_id, reason, temporal_identity,
                                                reset_event_id, reset_at, base_run_terminated, worker_identity,
                                                row_after)
        VALUES (${input.orderId}, ${input.newRunId}, ${input.baseRunId}, ${input.reason}, ${input.temporalIdentity},
                ${input.resetEventId}, ${input.resetAt}::timestamptz, ${input.baseRunTerminated}::jsonb,
                ${input.workerIdentity}, ${input.rowAfter}::jsonb)
        ON CONFLICT (order_id, new_run_id) DO NOTHING
        RETURNING ${OBSERVED_COLUMNS}`,
  );
  return rows[0] ?? null;
}

export async function listObservedResets(db: Database, orderId: string): Promise<ObservedResetRow[]> {
  const { rows } = await runSql<ObservedResetRow>(
    db,
    sql`SELECT ${OBSERVED_COLUMNS} FROM order_mail_observed_resets WHERE order_id = ${orderId}
         ORDER BY observed_at, id`,
  );
  return rows;
}
