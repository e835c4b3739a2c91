// The sweep's pages of quiet 'sending' rows (src/db/orderMailLog.ts, listQuietSendingRows): a keyset on
// (updated_at, order_id) with updated_at to the microsecond, so rows that share a timestamp, or differ by less
// than a millisecond (which a JavaScript Date would round away), are each read exactly once. Real Postgres.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { listQuietSendingRows, type QuietRowCursor } from '../../src/db/orderMailLog';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('quiet_row_pages');
});

afterAll(async () => {
  await database?.close();
});

it('pages of two read seven quiet rows once each, in order, whatever their timestamps share', async () => {
  const orderIds: string[] = [];
  for (let i = 0; i < 7; i++) {
    const orderId = await createOrder(database.db);
    const claim = await claimOrderMailRow(database.db, {
      orderId,
      claimToken: `pages/${orderId}/run`,
      workflowScope: `pages/${orderId}/`,
      issuedAt: new Date(),
      policy: 'assume-sent',
      idempotency: null,
      sendTimeoutMs: 8_000,
      recordedBy: 'test',
    });
    expect(claim).toMatchObject({ kind: 'claimed' });
    orderIds.push(orderId);
  }
  // Three share one instant, two are 1 µs and 2 µs after it, two an hour later.
  const microsAfter = [0, 0, 0, 1, 2, 3_600_000_000, 3_600_000_000];
  for (const [index, orderId] of orderIds.entries()) {
    await database.db.query(
      `UPDATE order_mail_log
          SET updated_at = timestamptz '2026-01-01 00:00:00.000100+00' + $2::bigint * interval '1 microsecond'
        WHERE order_id = $1`,
      [orderId, microsAfter[index]],
    );
  }

  const seen: string[] = [];
  let after: QuietRowCursor | null = null;
  for (let page = 0; page < 10; page++) {
    const { rows, next }: Awaited<ReturnType<typeof listQuietSendingRows>> = await listQuietSendingRows(
      database.db,
      { olderThanMs: 60_000, limit: 2, namespace: 'pages', after },
    );
    seen.push(...rows.map((row) => row.orderId));
    if (next === null) break;
    after = next;
  }
  expect(seen).toEqual(orderIds);
});
