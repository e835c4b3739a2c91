// The only reads the service makes of the shop's orders. An adopter whose `orders` looks different changes
// these queries (and the reconciliation query, src/db/queries/confirmedOrdersWithoutMail.sql), nothing else.
// Columns read: orders.id, customer_name, customer_email, ordered_at; order_items.order_id, line_no,
// product_name, quantity, unit_price_yen.
import type { Database } from './pool';

export interface OrderItemForMail {
  productName: string;
  quantity: number;
  unitPriceYen: bigint;
}

export interface OrderForMail {
  orderId: string;
  customerName: string;
  customerEmail: string;
  orderedAt: Date;
  items: OrderItemForMail[];
}

/**
 * The order and its items, in line order, in one statement (one round trip, one snapshot). `maxItems` bounds
 * how many items are read: a caller that refuses orders over a limit passes the limit + 1, so a huge order is
 * never loaded whole.
 */
export async function loadOrderForMail(
  db: Database,
  orderId: string,
  maxItems: number | null = null,
): Promise<OrderForMail | null> {
  // One row per item, the order's columns on each; an order without items gives one row, its item NULL.
  const { rows } = await db.query<{
    customerName: string;
    customerEmail: string;
    orderedAt: Date;
    lineNo: number | null;
    productName: string;
    quantity: number;
    unitPriceYen: string;
  }>(
    `SELECT o.customer_name AS "customerName", o.customer_email AS "customerEmail", o.ordered_at AS "orderedAt",
            i.line_no AS "lineNo", i.product_name AS "productName", i.quantity,
            i.unit_price_yen::text AS "unitPriceYen"
       FROM orders o
       LEFT JOIN LATERAL (
              SELECT line_no, product_name, quantity, unit_price_yen FROM order_items
               WHERE order_id = o.id ORDER BY line_no LIMIT $2) i ON true
      WHERE o.id = $1
      ORDER BY i.line_no`,
    [orderId, maxItems],
  );
  const first = rows[0];
  if (!first) return null;
  return {
    orderId,
    customerName: first.customerName,
    customerEmail: first.customerEmail,
    orderedAt: first.orderedAt,
    items: rows
      .filter((row) => row.lineNo !== null)
      .map((row) => ({
        productName: row.productName,
        quantity: row.quantity,
        unitPriceYen: BigInt(row.unitPriceYen),
      })),
  };
}

export async function orderExists(db: Database, orderId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM orders WHERE id = $1`, [orderId]);
  return rows.length > 0;
}
