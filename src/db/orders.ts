// The only reads of the shop's orders, through the order contract's views (docs/adoption.md).
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

/** The order and its items in one statement; `maxItems` bounds the read, so a huge order is never loaded. */
export async function loadOrderForMail(
  db: Database,
  orderId: string,
  maxItems: number | null = null,
): Promise<OrderForMail | null> {
  // One row per item (an order without items gives one, item NULL); extras as JSON of text columns.
  const { rows } = await db.query<{
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
  }>(
    // The order's row once (MATERIALIZED): a view's computed column (the demo's amount sums the items) would
    // otherwise be computed again for every item row of the join.
    `WITH o AS MATERIALIZED (
       SELECT v.order_id, v.customer_name, v.customer_email, v.ordered_at, v.amount_minor, v.currency,
              to_jsonb(v) AS whole
         FROM order_mail_source.orders_for_mail AS v
        WHERE v.order_id = $1)
     SELECT o.customer_name AS "customerName", o.customer_email AS "customerEmail", o.ordered_at AS "orderedAt",
            o.amount_minor::text AS "amountMinor", o.currency, o.whole,
            i.line_no AS "lineNo", i.product_name AS "productName", i.quantity,
            i.unit_amount_minor::text AS "unitAmountMinor"
       FROM o
       LEFT JOIN LATERAL (
              SELECT line_no, product_name, quantity, unit_amount_minor FROM order_mail_source.order_items_for_mail
               WHERE order_id = o.order_id ORDER BY line_no LIMIT $2) AS i ON true
      ORDER BY i.line_no`,
    [orderId, maxItems],
  );
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
