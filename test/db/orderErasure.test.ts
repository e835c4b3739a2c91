// Erasing an order is the shop's business: since migration 0063 no mail table has a foreign key to orders, so
// deleting an order that has a mail row and an attempt succeeds, and our rows stay as they were.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readMailLog } from '../../src/db/orderMailLog';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('order_erasure');
});
afterAll(async () => {
  await database?.close();
});

it('deletes an order our tables refer to, and keeps our rows', async () => {
  const orderId = await createOrder(database.db);
  const token = `default/${orderId}/run-1`;
  await database.db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at)
     VALUES ($1, 'sending', 1, $2, now())`,
    [orderId, token],
  );
  await database.db.query(
    `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, state, outcome,
                                      recorded_by)
     VALUES ($1, 1, $2, 0, now(), 'failed', 'not_sent', 'test')`,
    [orderId, token],
  );
  const { rowCount } = await database.db.query('DELETE FROM orders WHERE id = $1', [orderId]);
  expect(rowCount).toBe(1);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ orderId, state: 'sending' });
  const { rows } = await database.db.query('SELECT attempt FROM order_mail_attempts WHERE order_id = $1', [
    orderId,
  ]);
  expect(rows).toEqual([{ attempt: 1 }]);
});
