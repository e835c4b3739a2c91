// The read that renders the mail: the order and its items in line order, at most `maxItems` of them, in one
// statement (one round trip per send, and the order and its items from one snapshot).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/pool';
import { loadOrderForMail } from '../../src/db/orders';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let statements: string[];
let counted: Database;

beforeAll(async () => {
  database = await openTestDatabase('load_order_for_mail');
  statements = [];
  counted = {
    ...database.db,
    query: (sql, params) => {
      statements.push(sql);
      return database.db.query(sql, params);
    },
  };
});

afterAll(async () => {
  await database.close();
});

const items = [
  { productName: '抹茶ラテ', quantity: 2, unitPriceYen: 480 },
  { productName: 'ほうじ茶', quantity: 1, unitPriceYen: 9_007_199_254_740_993n },
  { productName: '玄米茶', quantity: 3, unitPriceYen: 0 },
];

describe('loadOrderForMail', () => {
  it('reads the order and its items in line order, in one statement', async () => {
    const orderId = await createOrder(database.db, {
      customerName: '山田 太郎',
      customerEmail: 'taro@example.com',
      items,
    });
    statements = [];
    const order = await loadOrderForMail(counted, orderId);
    expect(statements).toHaveLength(1);
    expect(order).toMatchObject({ orderId, customerName: '山田 太郎', customerEmail: 'taro@example.com' });
    expect(order!.orderedAt).toBeInstanceOf(Date);
    expect(order!.items).toEqual([
      { productName: '抹茶ラテ', quantity: 2, unitAmountMinor: 480n },
      { productName: 'ほうじ茶', quantity: 1, unitAmountMinor: 9_007_199_254_740_993n },
      { productName: '玄米茶', quantity: 3, unitAmountMinor: 0n },
    ]);
    // The demo's view states the amount as the sum of its items, in yen, exactly (past 2^53).
    expect(order).toMatchObject({ amountMinor: 9_007_199_254_741_953n, currency: 'JPY', extra: {} });
  });

  it('reads at most maxItems items, the first ones', async () => {
    const orderId = await createOrder(database.db, { items });
    statements = [];
    const order = await loadOrderForMail(counted, orderId, 2);
    expect(statements).toHaveLength(1);
    expect(order!.items.map((item) => item.productName)).toEqual(['抹茶ラテ', 'ほうじ茶']);
  });

  it('gives an order without items with no items, and a missing order as null', async () => {
    const orderId = await createOrder(database.db, { items: [] });
    statements = [];
    const order = await loadOrderForMail(counted, orderId);
    expect(statements).toHaveLength(1);
    expect(order).toMatchObject({ orderId, items: [] });
    expect(await loadOrderForMail(counted, String(Number(orderId) + 1_000_000))).toBeNull();
  });
});
