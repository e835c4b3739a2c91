// The sweep's "confirmed orders without a mail" read goes through the order contract (the demo's view over
// orders, migration 0063) and must stay a range read of the shop's index at a million orders: the view is
// inlined into the statement, so the partial index on orders (confirmed_at, id) still serves it. Planned as
// Postgres plans it, the sweep's own statement (src/db/queries/confirmedOrdersWithoutMail.sql) and parameters.
import { Client as PgClient, type QueryResultRow } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findConfirmedOrdersWithoutMail } from '../../src/db/confirmedOrders';
import type { Database } from '../../src/db/pool';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('confirmed_orders_index');
  // Its own connection: the pool's deadlines are a worker's, not a bulk load's.
  const loader = new PgClient({ connectionString: database.connectionString });
  await loader.connect();
  try {
    // A million orders over ~4 months, one in ten not confirmed.
    await loader.query(
      `INSERT INTO orders (customer_name, customer_email, status, ordered_at, confirmed_at)
       SELECT 'x', 'x@example.com', CASE WHEN g % 10 = 0 THEN 'pending' ELSE 'confirmed' END,
              now() - make_interval(secs => g * 10 + 5), now() - make_interval(secs => g * 10)
         FROM generate_series(1, 1000000) AS g`,
    );
    await loader.query('ANALYZE orders');
  } finally {
    await loader.end();
  }
}, 300_000);
afterAll(async () => {
  await database?.close();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/** Runs the sweep's read, recording its statement, and plans that statement with the same parameters. */
async function planOfSweep(after: { confirmedAt: string; orderId: string } | null): Promise<PlanNode[]> {
  const statements: { text: string; params: readonly unknown[] }[] = [];
  const recorder: Database = {
    query<Row extends QueryResultRow = QueryResultRow>(text: string, params: readonly unknown[] = []) {
      statements.push({ text, params });
      return database.db.query<Row>(text, params);
    },
    transaction: (work) => database.db.transaction(work),
    close: async () => undefined,
  };
  const batch = await findConfirmedOrdersWithoutMail(recorder, {
    graceMs: 60_000,
    notBefore: new Date(Date.now() - 30 * 24 * 3_600_000),
    after,
    limit: 100,
  });
  expect(batch.orderIds).toHaveLength(100);
  const [statement] = statements;
  expect(statement?.text).toContain('order_mail_source.orders_for_mail');
  const { rows } = await database.db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
    `EXPLAIN (FORMAT JSON) ${statement!.text}`,
    [...statement!.params],
  );
  return nodes(rows[0]!['QUERY PLAN'][0].Plan);
}

it('plans the first batch and a later one without a Seq Scan on the million orders', async () => {
  for (const after of [
    null,
    { confirmedAt: new Date(Date.now() - 20 * 24 * 3_600_000).toISOString(), orderId: '0' },
  ]) {
    const plan = await planOfSweep(after);
    expect(
      plan.filter((node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'orders'),
    ).toEqual([]);
    expect(plan.some((node) => node['Relation Name'] === 'orders' && node['Index Name'] !== undefined)).toBe(
      true,
    );
  }
});
