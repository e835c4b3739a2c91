// Orders as the shop would create them, for the demo, the benchmarks, the cut-over run and tests. The service
// itself never writes the shop's tables: src/db/orders.ts holds its only reads of them, and its worker role is
// granted SELECT on those columns alone (migration 0030).
import type { Database } from '../../src/db/pool';

export interface NewOrder {
  customerName: string;
  customerEmail: string;
  items: { productName: string; quantity: number; unitPriceYen: number | bigint }[];
  status?: 'pending' | 'confirmed' | 'cancelled';
}

/** Creates an order with its items in one transaction, as the shop would. */
export async function insertOrder(db: Database, order: NewOrder): Promise<string> {
  return db.transaction(async (client) => {
    const inserted = await client.query<{ id: string }>(
      `INSERT INTO orders (customer_name, customer_email, status, ordered_at, confirmed_at)
       VALUES ($1, $2, $3, now(), CASE WHEN $3 = 'confirmed' THEN now() END)
       RETURNING id::text AS id`,
      [order.customerName, order.customerEmail, order.status ?? 'confirmed'],
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
