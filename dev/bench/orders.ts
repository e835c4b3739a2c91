// Orders for the benchmark, inserted in bulk before a phase starts so that creating them is never part of
// what is measured. Same shape as the tests' sample order: two items, Japanese names.
import type { Database } from '../../src/db/pool';

export async function insertBenchOrders(db: Database, count: number): Promise<string[]> {
  if (count <= 0) return [];
  const { rows } = await db.query<{ ids: string[] }>(
    `WITH inserted AS (
       INSERT INTO orders (customer_name, customer_email, status, ordered_at, confirmed_at)
       SELECT '山田 太郎', 'customer' || g || '@example.com', 'confirmed', now(), now()
         FROM generate_series(1, $1::int) AS g
       RETURNING id
     ), items AS (
       INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
       SELECT inserted.id, item.line_no, item.product_name, item.quantity, item.unit_price_yen
         FROM inserted
        CROSS JOIN (VALUES (1, '有機緑茶 100g', 2, 1200), (2, '急須（常滑焼）', 1, 5800))
              AS item (line_no, product_name, quantity, unit_price_yen)
     )
     SELECT array_agg(id::text ORDER BY id) AS ids FROM inserted`,
    [count],
  );
  return rows[0]?.ids ?? [];
}

/** When each order's row was last written (the record step), in epoch milliseconds, for settled rows. */
export async function recordedTimes(
  db: Database,
  orderIds: string[],
): Promise<Map<string, { recordedAtMs: number; state: string; outcome: string | null }>> {
  const result = new Map<string, { recordedAtMs: number; state: string; outcome: string | null }>();
  const chunk = 5_000;
  for (let index = 0; index < orderIds.length; index += chunk) {
    const { rows } = await db.query<{
      orderId: string;
      recordedAtMs: string;
      state: string;
      outcome: string | null;
    }>(
      `SELECT order_id::text AS "orderId", (extract(epoch FROM updated_at) * 1000)::text AS "recordedAtMs",
              state, outcome
         FROM order_mail_log WHERE order_id = ANY($1::bigint[]) AND state <> 'sending'`,
      [orderIds.slice(index, index + chunk)],
    );
    for (const row of rows) {
      result.set(row.orderId, {
        recordedAtMs: Number(row.recordedAtMs),
        state: row.state,
        outcome: row.outcome,
      });
    }
  }
  return result;
}

/** How many of these orders are sent: the harness's cheap "are we done yet". */
export async function countSent(db: Database, orderIds: string[]): Promise<number> {
  const { rows } = await db.query<{ sent: string }>(
    `SELECT count(*)::text AS sent FROM order_mail_log WHERE order_id = ANY($1::bigint[]) AND state = 'sent'`,
    [orderIds],
  );
  return Number(rows[0]?.sent ?? 0);
}
