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
 * The order and its items, in line order. `maxItems` bounds how many items are read: a caller that refuses
 * orders over a limit passes the limit + 1, so a huge order is never loaded whole.
 */
export async function loadOrderForMail(
  db: Database,
  orderId: string,
  maxItems: number | null = null,
): Promise<OrderForMail | null> {
  const orders = await db.query<{ customerName: string; customerEmail: string; orderedAt: Date }>(
    `SELECT customer_name AS "customerName", customer_email AS "customerEmail", ordered_at AS "orderedAt"
       FROM orders WHERE id = $1`,
    [orderId],
  );
  const order = orders.rows[0];
  if (!order) return null;
  const items = await db.query<{ productName: string; quantity: number; unitPriceYen: string }>(
    `SELECT product_name AS "productName", quantity, unit_price_yen::text AS "unitPriceYen"
       FROM order_items WHERE order_id = $1 ORDER BY line_no LIMIT $2`,
    [orderId, maxItems],
  );
  return {
    orderId,
    ...order,
    items: items.rows.map((item) => ({ ...item, unitPriceYen: BigInt(item.unitPriceYen) })),
  };
}

export interface NewOrder {
  customerName: string;
  customerEmail: string;
  items: { productName: string; quantity: number; unitPriceYen: number | bigint }[];
  status?: 'pending' | 'confirmed' | 'cancelled';
  orderedAt?: Date;
}

/** Creates an order with its items in one transaction. For development, tests and the demo. */
export async function insertOrder(db: Database, order: NewOrder): Promise<string> {
  return db.transaction(async (client) => {
    const inserted = await client.query<{ id: string }>(
      `INSERT INTO orders (customer_name, customer_email, status, ordered_at, confirmed_at)
       VALUES ($1, $2, $3, COALESCE($4, now()), CASE WHEN $3 = 'confirmed' THEN now() END)
       RETURNING id::text AS id`,
      [order.customerName, order.customerEmail, order.status ?? 'confirmed', order.orderedAt ?? null],
    );
    const orderId = inserted.rows[0]!.id;
    for (const [index, item] of order.items.entries()) {
      await client.query(
        `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen) VALUES ($1, $2, $3, $4, $5)`,
        [orderId, index + 1, item.productName, item.quantity, item.unitPriceYen.toString()],
      );
    }
    return orderId;
  });
}

export async function orderExists(db: Database, orderId: string): Promise<boolean> {
  const { rows } = await db.query(`SELECT 1 FROM orders WHERE id = $1`, [orderId]);
  return rows.length > 0;
}
