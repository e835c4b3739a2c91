// The read that renders the mail: the order and its items in line order, at most `maxItems` of them, in one
// statement (one round trip per send, and the order and its items from one snapshot).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/pool';
import { loadOrderForAttempt, loadOrderForMail } from '../../src/db/orders';
import { firstClaim } from '../../src/mailRow/statements';
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

describe('loadOrderForAttempt: what the send reads before its fence', () => {
  it('reads the attempt’s provider and the order in one statement', async () => {
    const orderId = await createOrder(database.db, { items });
    const claimer = { claimToken: `default/${orderId}/run-1`, issuedAt: new Date() };
    await firstClaim(database.db, orderId, { ...claimer, provider: 'postmark', providerChoice: 'first' });
    statements = [];
    const read = await loadOrderForAttempt(
      counted,
      { orderId, claimToken: claimer.claimToken, attempt: 1 },
      2,
    );
    expect(statements).toHaveLength(1);
    expect(read.provider).toBe('postmark');
    expect(read.order).toEqual(await loadOrderForMail(database.db, orderId, 2));
  });

  it('names no provider for a row that is not the attempt’s, and still reads the order', async () => {
    const orderId = await createOrder(database.db);
    const claimToken = `default/${orderId}/run-1`;
    await firstClaim(database.db, orderId, {
      claimToken,
      issuedAt: new Date(),
      provider: 'postmark',
      providerChoice: 'first',
    });
    for (const attempt of [
      { orderId, claimToken: `default/${orderId}/run-2`, attempt: 1 },
      { orderId, claimToken, attempt: 2 },
    ]) {
      const read = await loadOrderForAttempt(database.db, attempt);
      expect(read.provider).toBeNull();
      expect(read.order).toMatchObject({ orderId });
    }
    await database.db.query(
      `UPDATE order_mail_log SET state = 'failed', outcome = 'not_sent' WHERE order_id = $1`,
      [orderId],
    );
    expect((await loadOrderForAttempt(database.db, { orderId, claimToken, attempt: 1 })).provider).toBeNull();
  });

  it('gives a missing order as null, in one statement', async () => {
    const orderId = String(Number(await createOrder(database.db)) + 1_000_000);
    statements = [];
    const read = await loadOrderForAttempt(counted, { orderId, claimToken: 'default/x/y', attempt: 1 });
    expect(statements).toHaveLength(1);
    expect(read).toEqual({ provider: null, order: null });
  });
});

describe('the read reads the order view’s row once', () => {
  interface PlanNode {
    'Relation Name'?: string;
    'Actual Loops'?: number;
    Plans?: PlanNode[];
  }
  const scansOf = (node: PlanNode, relation: string): number[] => [
    ...(node['Relation Name'] === relation ? [node['Actual Loops'] ?? 0] : []),
    ...(node.Plans ?? []).flatMap((child) => scansOf(child, relation)),
  ];

  // The demo's view sums the items for the amount; to_jsonb of the view's row in a CTE planned and ran that sum a
  // second time (docs/benchmarks.md, "Our Postgres per statement"). Each read: the sum once, the items once.
  it('scans the items twice, once each: for the amount and for the lines', async () => {
    const orderId = await createOrder(database.db, { items });
    const reads: [string, unknown[]][] = [];
    const recording: Database = {
      ...database.db,
      query: (sql, params) => {
        reads.push([sql, [...(params ?? [])]]);
        return database.db.query(sql, params);
      },
    };
    await loadOrderForMail(recording, orderId, 51);
    await loadOrderForAttempt(recording, { orderId, claimToken: 'default/x/y', attempt: 1 }, 51);
    expect(reads).toHaveLength(2);
    for (const [sql, params] of reads) {
      const { rows } = await database.db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`,
        params,
      );
      expect(scansOf(rows[0]!['QUERY PLAN'][0]!.Plan, 'order_items')).toEqual([1, 1]);
    }
  });
});
