// Operators' acts (ops retry|resolve) and their audit rows; docs/design.md §4 rule 5. Who acted is the
// session's login, set by the database (migration 0057), never a name the caller passes.
import { operatorResolve, type ResolveValues } from '../mailRow/statements';
import { ACT_COLUMNS, type MailLogSnapshot, type OperatorActRow } from './operatorActRow';
import type { Database } from './pool';
import { buildSql, runSql, sql } from './sql';

export type { MailLogSnapshot, OperatorActKind, OperatorActRow } from './operatorActRow';

export type ResolveInput = ResolveValues;

/**
 * Settles the row by an operator's word (outcome 'resolved', a token of the operator's, so the old holder
 * stops: ClaimLost). Null, changing nothing, when the row is not as seen or its attempt dispatched meanwhile.
 */
export function resolveMailLog(db: Database, input: ResolveInput): Promise<OperatorActRow | null> {
  return operatorResolve(db, input);
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
 * Whether this is the run's first claim after another run of its id held the row (so a reset may have
 * started it). Later claims must not need Temporal: test/chaos/workerClocksApart.test.ts.
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
 * A reset made outside the ops CLI as a worker saw it in history, under the worker's login: an observation,
 * not an act. Once per run; null when it was there.
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
