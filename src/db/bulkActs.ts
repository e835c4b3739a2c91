// Acts on many orders (migration 0062): the saved selection and each order's progress. The acts themselves
// are the per-order ones (src/ops/retryOrderMail.ts, resolveOrderMail.ts); nothing here writes the row.
import { createHash } from 'node:crypto';
import type { PoolClient, QueryResultRow } from 'pg';
import type { LogOutcome } from '../shared/mailOutcome';
import type { MailLogState } from './orderMailLog';
import type { Database } from './pool';
import { runSql, sql } from './sql';

/** Which rows of order_mail_log a bulk act is about; null matches anything. Times are absolute (ISO). */
export interface BulkFilter {
  state: MailLogState | null;
  outcome: LogOutcome | null;
  /** On the row's created_at: when the order's mail was first claimed. since ≤ created_at < until. */
  since: string | null;
  until: string | null;
  /** The provider the row's latest attempt was given (order_mail_log.provider). */
  provider: string | null;
  /** The template of the order's latest attempt that made a request (order_mail_attempts, migration 0061). */
  template: string | null;
  /** A prefix of that template's SHA-256 (hex), to tell two versions of one template name apart. */
  templateSha256: string | null;
}

export type BulkVerb = { verb: 'retry' } | { verb: 'resolve'; as: 'sent' | 'failed' };

export type BulkOrderStatus = 'pending' | 'acting' | 'done' | 'refused';

export interface BulkActRow {
  id: string;
  verb: 'retry' | 'resolve';
  resolveAs: 'sent' | 'failed' | null;
  filter: BulkFilter;
  reason: string;
  maxOrders: number;
  orderCount: number;
  selectionSha256: string;
  selectedBy: string;
  selectedAt: Date;
  startedBy: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface BulkOrderRow {
  orderId: string;
  status: BulkOrderStatus;
  baseRunId: string | null;
  actId: string | null;
  refusal: string | null;
}

const BULK_COLUMNS = sql`id::text AS id, verb, resolve_as AS "resolveAs", filter, reason, max_orders AS "maxOrders",
  order_count AS "orderCount", selection_sha256 AS "selectionSha256", selected_by AS "selectedBy",
  selected_at AS "selectedAt", started_by AS "startedBy", started_at AS "startedAt", finished_at AS "finishedAt"`;

/** The hash a selection is known by: SHA-256 over its order ids, sorted as numbers, one per line. */
export function selectionHash(orderIds: readonly string[]): string {
  const sorted = [...orderIds].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
  return createHash('sha256').update(sorted.join('\n')).digest('hex');
}

/** The order ids the filter selects now, ascending. */
export async function selectOrderIds(db: Database, filter: BulkFilter): Promise<string[]> {
  const { rows } = await runSql<{ orderId: string }>(
    db,
    sql`SELECT log.order_id::text AS "orderId" FROM order_mail_log AS log
         WHERE (${filter.state}::text IS NULL OR log.state = ${filter.state})
           AND (${filter.outcome}::text IS NULL OR log.outcome = ${filter.outcome})
           AND (${filter.since}::timestamptz IS NULL OR log.created_at >= ${filter.since}::timestamptz)
           AND (${filter.until}::timestamptz IS NULL OR log.created_at < ${filter.until}::timestamptz)
           AND (${filter.provider}::text IS NULL OR log.provider = ${filter.provider})
           AND (${filter.template}::text IS NULL AND ${filter.templateSha256}::text IS NULL OR EXISTS (
                 SELECT 1 FROM (SELECT attempt.template_name, attempt.template_sha256
                                  FROM order_mail_attempts AS attempt
                                 WHERE attempt.order_id = log.order_id AND attempt.template_name IS NOT NULL
                                 ORDER BY attempt.id DESC LIMIT 1) AS latest
                  WHERE (${filter.template}::text IS NULL OR latest.template_name = ${filter.template})
                    AND (${filter.templateSha256}::text IS NULL
                         OR starts_with(latest.template_sha256, ${filter.templateSha256}::text))))
         ORDER BY log.order_id`,
  );
  return rows.map((row) => row.orderId);
}

/** Saves a dry run's selection with its orders, all pending. */
export async function saveSelection(
  db: Database,
  input: {
    verb: BulkVerb;
    filter: BulkFilter;
    reason: string;
    maxOrders: number;
    orderIds: readonly string[];
  },
): Promise<BulkActRow> {
  return db.transaction(async (client) => {
    const { rows } = await client.query<BulkActRow>(
      `INSERT INTO order_mail_bulk_acts (verb, resolve_as, filter, reason, max_orders, order_count, selection_sha256)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       RETURNING id::text AS id, verb, resolve_as AS "resolveAs", filter, reason, max_orders AS "maxOrders",
                 order_count AS "orderCount", selection_sha256 AS "selectionSha256", selected_by AS "selectedBy",
                 selected_at AS "selectedAt", started_by AS "startedBy", started_at AS "startedAt",
                 finished_at AS "finishedAt"`,
      [
        input.verb.verb,
        input.verb.verb === 'resolve' ? input.verb.as : null,
        input.filter,
        input.reason,
        input.maxOrders,
        input.orderIds.length,
        selectionHash(input.orderIds),
      ],
    );
    const bulk = rows[0]!;
    await client.query(
      `INSERT INTO order_mail_bulk_act_orders (bulk_id, order_id) SELECT $1, unnest($2::bigint[])`,
      [bulk.id, input.orderIds],
    );
    return bulk;
  });
}

export async function readBulkAct(db: Database, id: string): Promise<BulkActRow | null> {
  const { rows } = await runSql<BulkActRow>(
    db,
    sql`SELECT ${BULK_COLUMNS} FROM order_mail_bulk_acts WHERE id = ${id}::bigint`,
  );
  return rows[0] ?? null;
}

export async function listBulkOrders(db: Database, id: string): Promise<BulkOrderRow[]> {
  const { rows } = await runSql<BulkOrderRow>(
    db,
    sql`SELECT order_id::text AS "orderId", status, base_run_id AS "baseRunId", act_id::text AS "actId", refusal
          FROM order_mail_bulk_act_orders WHERE bulk_id = ${id}::bigint ORDER BY order_id`,
  );
  return rows;
}

/** Marks the bulk act started, once: false when it already was (a resume). */
export async function markBulkStarted(db: Database, id: string): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_bulk_acts SET started_at = now() WHERE id = ${id}::bigint AND started_at IS NULL`,
  );
  return rowCount === 1;
}

export async function markBulkFinished(db: Database, id: string): Promise<void> {
  await runSql(
    db,
    sql`UPDATE order_mail_bulk_acts SET finished_at = now() WHERE id = ${id}::bigint AND finished_at IS NULL`,
  );
}

/**
 * Holds the bulk act for this run (a transaction-scoped advisory lock): two resumes at once would each take
 * the other's 'acting' orders for interrupted ones. False when another run holds it.
 */
export async function lockBulkAct(client: PoolClient, id: string): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(
    `SELECT pg_try_advisory_xact_lock(hashtext('order_mail_bulk_acts'), $1::int) AS locked`,
    [Number(id) % 2_147_483_647],
  );
  return rows[0]?.locked === true;
}

/** pending → acting, with the run a retry is about to reset; committed before any Temporal request. */
export async function markOrderActing(
  db: Database,
  input: { bulkId: string; orderId: string; baseRunId: string | null },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_bulk_act_orders SET status = 'acting', base_run_id = ${input.baseRunId}, updated_at = now()
         WHERE bulk_id = ${input.bulkId}::bigint AND order_id = ${input.orderId}::bigint AND status = 'pending'`,
  );
  return rowCount === 1;
}

/** pending|acting → done, in the act's own transaction; false (roll back) when not open for this run. */
export async function markOrderDone(
  db: Database,
  input: { bulkId: string; orderId: string; actId: string },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_bulk_act_orders SET status = 'done', act_id = ${input.actId}::bigint, updated_at = now()
         WHERE bulk_id = ${input.bulkId}::bigint AND order_id = ${input.orderId}::bigint
           AND status IN ('pending', 'acting')`,
  );
  return rowCount === 1;
}

export async function markOrderRefused(
  db: Database,
  input: { bulkId: string; orderId: string; refusal: string },
): Promise<boolean> {
  const { rowCount } = await runSql(
    db,
    sql`UPDATE order_mail_bulk_act_orders SET status = 'refused', refusal = ${input.refusal}, updated_at = now()
         WHERE bulk_id = ${input.bulkId}::bigint AND order_id = ${input.orderId}::bigint
           AND status IN ('pending', 'acting')`,
  );
  return rowCount === 1;
}

/** A Database over one client already in a transaction: everything run through it joins that transaction. */
export function inTransaction(client: PoolClient): Database {
  return {
    async query<Row extends QueryResultRow = QueryResultRow>(text: string, params: readonly unknown[] = []) {
      const result = await client.query<Row>(text, params as unknown[]);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },
    transaction: (work) => work(client),
    close: () => Promise.resolve(),
  };
}
