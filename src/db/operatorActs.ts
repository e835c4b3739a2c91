// Typed queries for operators' acts (npm run ops -- retry|resolve) and their audit table,
// order_mail_operator_acts. Like every state change, resolve is ONE statement fenced on what the operator saw.
import { randomUUID } from 'node:crypto';
import type { LogOutcome } from '../shared/mailOutcome';
import type { MailLogState } from './orderMailLog';
import type { Database } from './pool';

export type OperatorActKind = 'retry' | 'resolve';

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
  operator: string;
  actedAt: Date;
  reason: string;
  rowBefore: MailLogSnapshot | null;
  rowAfter: MailLogSnapshot | null;
  details: Record<string, unknown>;
}

const ACT_COLUMNS = `id::text AS id, order_id::text AS "orderId", act, operator, acted_at AS "actedAt", reason,
  row_before AS "rowBefore", row_after AS "rowAfter", details`;

export interface ResolveInput {
  orderId: string;
  as: 'sent' | 'failed';
  operator: string;
  reason: string;
  /** The row as the operator's tool read it; the statement changes nothing if it is no longer so. */
  seen: { state: MailLogState; attempts: number; claimToken: string };
}

/**
 * Settles the row by an operator's word: state `as`, outcome 'resolved', and a claim token of the operator's,
 * so a run still holding the old claim can neither dispatch nor record (its fence is (token, attempts)) and
 * stops (ClaimLost). An attempt that was in flight gets its audit row here, since its run never will. The
 * act is written in the same statement. Returns null, having changed nothing, when the row is not as seen.
 */
export async function resolveMailLog(db: Database, input: ResolveInput): Promise<OperatorActRow | null> {
  const { rows } = await db.query<OperatorActRow>(
    `WITH resolved AS (
       UPDATE order_mail_log AS log
          SET state = $2, outcome = 'resolved', unknown_policy = NULL,
              claim_token = $8,
              last_error = 'resolved as ' || $2 || ' by ' || $3 || ': ' || $4, updated_at = now()
         FROM (SELECT * FROM order_mail_log WHERE order_id = $1 FOR UPDATE) AS previous
        WHERE log.order_id = $1 AND previous.order_id = log.order_id
          AND log.state = $5 AND log.attempts = $6 AND log.claim_token = $7
       RETURNING to_jsonb(previous) AS before, to_jsonb(log) AS after
     ), cut_off AS (
       INSERT INTO order_mail_attempts (order_id, attempt, claim_token, claimed_at, dispatched_at, state, outcome,
                                        error, recorded_by)
       SELECT $1, (before->>'attempts')::int, before->>'claim_token', (before->>'claimed_at')::timestamptz,
              (before->>'dispatched_at')::timestamptz, $2,
              CASE WHEN before->>'dispatched_at' IS NULL THEN 'not_sent' ELSE 'unknown' END,
              'ended by an operator while in flight (resolved as ' || $2 || '): ' || $4, 'operator:' || $3
         FROM resolved WHERE before->>'state' = 'sending'
     )
     INSERT INTO order_mail_operator_acts (order_id, act, operator, reason, row_before, row_after)
     SELECT $1, 'resolve', $3, $4, before, after FROM resolved
     RETURNING ${ACT_COLUMNS}`,
    [
      input.orderId,
      input.as,
      input.operator,
      input.reason,
      input.seen.state,
      input.seen.attempts,
      input.seen.claimToken,
      // Never a prefix of a run's token ('<namespace>/<workflow id>/<run id>'), so no run takes it for its own.
      `operator:${randomUUID()}`,
    ],
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
     RETURNING ${ACT_COLUMNS}`,
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
    `SELECT ${ACT_COLUMNS} FROM order_mail_operator_acts WHERE order_id = $1 ORDER BY acted_at, id`,
    [orderId],
  );
  return rows;
}
