// The only reads of the shop's orders, through the order contract's views (docs/adoption.md); the send's read
// also names the attempt's provider, so that the send reads once before its fence.
import type { Database } from './pool';

export interface OrderItemForMail {
  productName: string;
  quantity: number;
  /** In the order's currency's minor unit (yen, cents). */
  unitAmountMinor: bigint;
}

export interface OrderForMail {
  orderId: string;
  customerName: string;
  customerEmail: string;
  orderedAt: Date;
  /** The order's amount in the minor unit of `currency`, as the shop states it. */
  amountMinor: bigint;
  /** ISO-4217, e.g. JPY, USD. */
  currency: string;
  items: OrderItemForMail[];
  /** The orders view's extra_<name> columns, by <name> (NULL as empty text): order.extra.<name> in templates. */
  extra: Record<string, string>;
}

// The order's row once, fenced by OFFSET 0: the view's computed columns (the demo's amount sums the items) are
// then computed once, not again for every item row of the join nor again for to_jsonb (a CTE with to_jsonb(v) of
// the view did both: the sum was planned and run twice). $1 the order, $2 the item limit.
const ORDER_ROW = `(SELECT * FROM order_mail_source.orders_for_mail WHERE order_id = $1 OFFSET 0) AS o`;
const ORDER_COLUMNS = `o.customer_name AS "customerName", o.customer_email AS "customerEmail", o.ordered_at AS "orderedAt",
            o.amount_minor::text AS "amountMinor", o.currency, to_jsonb(o.*) AS whole,
            i.line_no AS "lineNo", i.product_name AS "productName", i.quantity,
            i.unit_amount_minor::text AS "unitAmountMinor"`;
const ITEMS = `LEFT JOIN LATERAL (
              SELECT line_no, product_name, quantity, unit_amount_minor FROM order_mail_source.order_items_for_mail
               WHERE order_id = o.order_id ORDER BY line_no LIMIT $2) AS i ON true`;

/** One row per item (an order without items gives one, item NULL); extras as JSON of text columns. */
interface OrderRow {
  customerName: string;
  customerEmail: string;
  orderedAt: Date;
  amountMinor: string;
  currency: string;
  whole: Record<string, unknown>;
  lineNo: number | null;
  productName: string;
  quantity: number;
  unitAmountMinor: string;
}

/** The order and its items in one statement; `maxItems` bounds the read, so a huge order is never loaded. */
export async function loadOrderForMail(
  db: Database,
  orderId: string,
  maxItems: number | null = null,
): Promise<OrderForMail | null> {
  const { rows } = await db.query<OrderRow>(
    `SELECT ${ORDER_COLUMNS}
       FROM ${ORDER_ROW}
       ${ITEMS}
      ORDER BY i.line_no`,
    [orderId, maxItems],
  );
  return orderOf(orderId, rows);
}

/**
 * What the send reads before its fence, in one statement (one round trip): the provider the claim chose for
 * this attempt (null when it chose none, or when the row is no longer the attempt's, 'sending'), and the
 * order as loadOrderForMail reads it.
 */
export async function loadOrderForAttempt(
  db: Database,
  attempt: { orderId: string; claimToken: string; attempt: number },
  maxItems: number | null = null,
): Promise<{ provider: string | null; order: OrderForMail | null }> {
  // One row even without the order (`one`), so the provider is read either way.
  const { rows } = await db.query<OrderRow & { attemptProvider: string | null; found: boolean }>(
    `SELECT (SELECT log.provider FROM order_mail_log AS log
              WHERE log.order_id = $1 AND log.claim_token = $3 AND log.attempts = $4 AND log.state = 'sending')
              AS "attemptProvider",
            o.order_id IS NOT NULL AS found, ${ORDER_COLUMNS}
       FROM (SELECT 1) AS one
       LEFT JOIN ${ORDER_ROW} ON true
       ${ITEMS}
      ORDER BY i.line_no`,
    [attempt.orderId, maxItems, attempt.claimToken, attempt.attempt],
  );
  const first = rows[0];
  return {
    provider: first?.attemptProvider ?? null,
    order: first?.found === true ? orderOf(attempt.orderId, rows) : null,
  };
}

function orderOf(orderId: string, rows: readonly OrderRow[]): OrderForMail | null {
  const first = rows[0];
  if (!first) return null;
  const extra: Record<string, string> = {};
  for (const [column, value] of Object.entries(first.whole)) {
    if (column.startsWith('extra_'))
      extra[column.slice('extra_'.length)] = typeof value === 'string' ? value : '';
  }
  return {
    orderId,
    customerName: first.customerName,
    customerEmail: first.customerEmail,
    orderedAt: first.orderedAt,
    amountMinor: BigInt(first.amountMinor),
    currency: first.currency,
    items: rows
      .filter((row) => row.lineNo !== null)
      .map((row) => ({
        productName: row.productName,
        quantity: row.quantity,
        unitAmountMinor: BigInt(row.unitAmountMinor),
      })),
    extra,
  };
}

export async function orderExists(db: Database, orderId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM order_mail_source.orders_for_mail WHERE order_id = $1`, [
    orderId,
  ]);
  return rows.length > 0;
}
