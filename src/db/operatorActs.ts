// Typed queries for operators' acts (npm run ops -- retry|resolve) and their audit table,
// order_mail_operator_acts. Like every state change, resolve is ONE statement fenced on what the operator saw.
// Resolving as failed is the deliberate "it did not arrive, send it again": it bumps the row's resend count,
// so the next claim's request carries a new idempotency key (src/mail/idempotencyKey.ts) and really sends.
import { randomUUID } from 'node:crypto';
import type { LogOutcome } from '../shared/mailOutcome';
import type { MailLogState } from './orderMailLog';
import type { Database } from './pool';
import { buildSql, runSql, sql } from './sql';

/** 'reset': a reset made outside the ops CLI (the Web UI), recorded by the claim of the run it started. */
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
  /** The name the act was given (--operator, $OPERATOR, the OS user; for a reset, Temporal's identity). */
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
  operator: string;
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
  const cutOffNote = `ended by an operator while in flight (resolved as ${input.as}): ${input.reason}`;
  const { rows } = await runSql<OperatorActRow>(
    db,
    sql`WITH resolved AS (
          UPDATE order_mail_log AS log
             SET state = ${input.as}, outcome = 'resolved', unknown_policy = NULL, verification = NULL,
                 -- Never a prefix of a run's token ('<namespace>/<workflow id>/<run id>'): no run takes it for its own.
                 claim_token = ${`operator:${randomUUID()}`}, resend_count = log.resend_count + ${resend}::int,
                 last_error = ${`resolved as ${input.as} by ${input.operator}: ${input.reason}`}, updated_at = now()
            FROM (SELECT * FROM order_mail_log WHERE order_id = ${input.orderId} FOR UPDATE) AS previous
           WHERE log.order_id = ${input.orderId} AND previous.order_id = log.order_id
             AND log.state = ${seen.state} AND log.attempts = ${seen.attempts} AND log.claim_token = ${seen.claimToken}
             AND (log.dispatched_at IS NOT NULL) = ${seen.dispatched}
          RETURNING to_jsonb(previous) AS before, to_jsonb(log) AS after
        ), cut_off AS (
          INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                           state, outcome, error, recorded_by, provider, provider_choice)
          SELECT ${input.orderId}, (before->>'attempts')::int, before->>'claim_token', (before->>'resend_count')::int,
                 (before->>'claimed_at')::timestamptz, (before->>'dispatched_at')::timestamptz, ${input.as},
                 ${cutOffOutcome}, ${cutOffNote}, ${`operator:${input.operator}`}, before->>'provider',
                 before->>'provider_choice'
            FROM resolved WHERE before->>'state' = 'sending'
        )
        INSERT INTO order_mail_operator_acts (order_id, act, operator, reason, row_before, row_after)
        SELECT ${input.orderId}, 'resolve', ${input.operator}, ${input.reason}, before, after FROM resolved
        RETURNING ${ACT_COLUMNS}`,
  );
  return rows[0] ?? null;
}

/** Writes the audit row of a retry (a reset, or a start past retention), after Temporal accepted it. */
export async function insertRetryAct(
  db: Database,
  input: {
    orderId: string;
    operator: string;
    reason: string;
    rowBefore: MailLogSnapshot | null;
    details: Record<string, unknown>;
  },
): Promise<OperatorActRow> {
  const { rows } = await db.query<OperatorActRow>(
    `INSERT INTO order_mail_operator_acts (order_id, act, operator, reason, row_before, details)
     VALUES ($1, 'retry', $2, $3, $4, $5)
     RETURNING ${buildSql(ACT_COLUMNS).text}`,
    [input.orderId, input.operator, input.reason, input.rowBefore, input.details],
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
                                   OR details -> 'reset' ->> 'newRunId' = ${input.runId})) AS follows`,
  );
  return rows[0]?.follows === true;
}

/**
 * The act of a reset made outside the ops CLI (the Web UI, `temporal workflow reset`), from what Temporal's
 * history recorded: its reason, and its identity. Once per run (a unique index); null when it was there.
 */
export async function insertResetAct(
  db: Database,
  input: {
    orderId: string;
    identity: string;
    reason: string;
    rowAfter: MailLogSnapshot | null;
    details: Record<string, unknown> & { newRunId: string };
  },
): Promise<OperatorActRow | null> {
  const { rows } = await runSql<OperatorActRow>(
    db,
    sql`INSERT INTO order_mail_operator_acts (order_id, act, operator, reason, row_after, details)
        VALUES (${input.orderId}, 'reset', ${input.identity}, ${input.reason}, ${input.rowAfter}::jsonb,
                ${input.details}::jsonb)
        ON CONFLICT (order_id, (details ->> 'newRunId')) WHERE act = 'reset' DO NOTHING
        RETURNING ${ACT_COLUMNS}`,
  );
  return rows[0] ?? null;
}
