// Operators' holds on sends (migration 0060); each set or lift writes its act in the same statement. The
// dispatch fence reads the table itself (src/activities/dispatchFence.ts).
import type { Database } from './pool';
import { runSql, sql } from './sql';

/** '*' holds every provider's sends; else one provider's name. */
export type HoldScope = '*' | (string & {});
export const EVERY_PROVIDER: HoldScope = '*';

export interface SendHoldRow {
  scope: HoldScope;
  heldBy: string;
  heldAt: Date;
  reason: string;
}

const HOLD_COLUMNS = sql`scope, held_by AS "heldBy", held_at AS "heldAt", reason`;

/**
 * Sets a hold on `scope` and records the act, in one statement. Null when that scope is already held: the
 * hold in force and its act stay as they were.
 */
export async function setSendHold(
  db: Database,
  input: { scope: HoldScope; reason: string },
): Promise<SendHoldRow | null> {
  const { rows } = await runSql<SendHoldRow>(
    db,
    sql`WITH held AS (
          INSERT INTO order_mail_send_holds (scope, reason) VALUES (${input.scope}, ${input.reason})
          ON CONFLICT (scope) DO NOTHING
          RETURNING ${HOLD_COLUMNS}
        ), act AS (
          INSERT INTO order_mail_operator_acts (order_id, act, reason, details)
          SELECT NULL, 'hold', reason, jsonb_build_object('scope', scope) FROM held
        )
        SELECT * FROM held`,
  );
  return rows[0] ?? null;
}

/** Lifts the hold on `scope` and records the act, in one statement. Null when that scope was not held. */
export async function liftSendHold(
  db: Database,
  input: { scope: HoldScope; reason: string },
): Promise<SendHoldRow | null> {
  const { rows } = await runSql<SendHoldRow>(
    db,
    sql`WITH lifted AS (
          DELETE FROM order_mail_send_holds WHERE scope = ${input.scope}
          RETURNING ${HOLD_COLUMNS}
        ), act AS (
          INSERT INTO order_mail_operator_acts (order_id, act, reason, details)
          SELECT NULL, 'resume', ${input.reason},
                 jsonb_build_object('scope', "scope", 'heldBy', "heldBy", 'heldAt', "heldAt", 'heldFor', "reason")
            FROM lifted
        )
        SELECT * FROM lifted`,
  );
  return rows[0] ?? null;
}

export async function readSendHolds(db: Database): Promise<SendHoldRow[]> {
  const { rows } = await runSql<SendHoldRow>(
    db,
    sql`SELECT ${HOLD_COLUMNS} FROM order_mail_send_holds ORDER BY held_at`,
  );
  return rows;
}

/**
 * Waits out every order_mail_log write that began before now: a fence that started before the hold committed
 * may still pass. SHARE mode waits for those writers (milliseconds) and is released at once.
 */
export async function waitOutEarlierWrites(db: Database, timeoutMs: number): Promise<void> {
  await db.transaction(async (client) => {
    await client.query(`SELECT set_config('lock_timeout', $1, true)`, [`${Math.ceil(timeoutMs)}ms`]);
    await client.query('LOCK TABLE order_mail_log IN SHARE MODE');
  });
}

export interface InFlightAttempt {
  orderId: string;
  attempt: number;
  provider: string | null;
  dispatchedAt: Date;
  claimToken: string;
}

/** Attempts that passed the dispatch fence and are not recorded yet, through `scope`'s provider(s). */
export async function listDispatchedUnrecorded(db: Database, scope: HoldScope): Promise<InFlightAttempt[]> {
  const { rows } = await runSql<InFlightAttempt>(
    db,
    sql`SELECT order_id::text AS "orderId", attempts AS attempt, provider, dispatched_at AS "dispatchedAt",
               claim_token AS "claimToken"
          FROM order_mail_log
         WHERE state = 'sending' AND dispatched_at IS NOT NULL
           AND (${scope}::text = '*' OR provider = ${scope}::text)
         ORDER BY dispatched_at`,
  );
  return rows;
}

/** The providers the rows of `orderIds` name (null: a row that names none), for resume's scope. */
export async function readRowProviders(
  db: Database,
  orderIds: readonly string[],
): Promise<Map<string, string | null>> {
  const { rows } = await runSql<{ orderId: string; provider: string | null }>(
    db,
    sql`SELECT order_id::text AS "orderId", provider FROM order_mail_log
         WHERE order_id = ANY(${orderIds}::bigint[])`,
  );
  return new Map(rows.map((row) => [row.orderId, row.provider]));
}

export interface SendHoldGauge {
  scope: HoldScope;
  /** How long the hold has been in force. */
  heldSeconds: number;
  /** Orders whose last attempt the fence refused under this hold (not sent, no request); their runs wait. */
  heldOrders: number;
}

/** One row per hold in force, for the worker's gauges (deploy/prometheus/alerts.yml, OrderMailSendHoldLong). */
export async function readSendHoldGauges(db: Database): Promise<SendHoldGauge[]> {
  const { rows } = await runSql<SendHoldGauge>(
    db,
    sql`SELECT hold.scope, extract(epoch FROM now() - hold.held_at)::float8 AS "heldSeconds",
               (SELECT count(*) FROM order_mail_log AS log
                 WHERE log.state = 'failed' AND log.updated_at >= hold.held_at AND log.outcome = 'not_sent'
                   AND log.dispatched_at IS NULL AND (hold.scope = '*' OR log.provider = hold.scope))::int
                 AS "heldOrders"
          FROM order_mail_send_holds AS hold`,
  );
  return rows;
}
