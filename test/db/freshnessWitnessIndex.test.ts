// The freshness witness's query (src/db/freshnessWitness.ts) runs for every lookup that found nothing, on a log
// that keeps one row per order forever. Planned as Postgres plans it on a log of 100,000 sent rows: one range
// read of its own partial index (migration 0031), never a scan of the log.
import type { QueryResultRow } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findWitnessCandidate } from '../../src/db/freshnessWitness';
import type { Database } from '../../src/db/pool';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('witness_index');
}, 60_000);
afterAll(async () => {
  await database?.close();
});

const ORIGIN = 'https://api.example.com:443';

it('finds the witness by a range read of order_mail_log_witness_idx, never a scan of the log', async () => {
  await database.db.transaction(async (client) => {
    await client.query(`SET LOCAL statement_timeout = '120s'`);
    // Sends of weeks, two providers, most of them long before the attempt asked about.
    await client.query(
      `WITH sent AS (
         INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
         SELECT 'x', 'x@example.com', 'confirmed', now() - make_interval(secs => g * 10)
           FROM generate_series(1, 100000) AS g ORDER BY random()
         RETURNING id, confirmed_at
       )
       INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at,
                                   dispatched_at, outcome, http_status, updated_at, dispatch_provider,
                                   dispatch_origin, dispatch_send_key, dispatch_send_timeout_ms)
       SELECT id, 'sent', 1, 'default/' || id || '/run', confirmed_at, confirmed_at, confirmed_at, 'accepted', 202,
              confirmed_at + interval '1 second', CASE WHEN id % 2 = 0 THEN 'generic' ELSE 'postmark' END,
              $1, 'order-confirmation/default/' || id || '/0', 8000
         FROM sent`,
      [ORIGIN],
    );
  });
  await database.db.query('ANALYZE order_mail_log');
  const { rows } = await database.db.query<{ orderId: string; dispatchedAt: Date }>(
    `SELECT order_id::text AS "orderId", dispatched_at AS "dispatchedAt" FROM order_mail_log
      WHERE dispatch_provider = 'generic' ORDER BY dispatched_at DESC OFFSET 100 LIMIT 1`,
  );
  const asked = rows[0]!;

  const statements: { text: string; params: readonly unknown[] }[] = [];
  const recorder: Database = {
    query<Row extends QueryResultRow = QueryResultRow>(text: string, params: readonly unknown[] = []) {
      statements.push({ text, params });
      return database.db.query<Row>(text, params);
    },
    transaction: (work) => database.db.transaction(work),
    close: async () => undefined,
  };
  const witness = await findWitnessCandidate(recorder, {
    orderId: asked.orderId,
    destination: { provider: 'generic', origin: ORIGIN, scope: null, credentialFingerprint: null },
    bounds: { dispatchedFrom: new Date(asked.dispatchedAt.getTime() + 8_001), endedBy: null },
  });
  expect(witness?.dispatchedAt.getTime()).toBeGreaterThanOrEqual(asked.dispatchedAt.getTime());
  expect(statements).toHaveLength(1);

  const { rows: plan } = await database.db.query<{ 'QUERY PLAN': string }>(
    `EXPLAIN ${statements[0]!.text}`,
    statements[0]!.params,
  );
  const text = plan.map((row) => row['QUERY PLAN']).join('\n');
  // Either an ordered read of the index that stops at the first match, or a bitmap read of the same range
  // whose few rows are then sorted: the planner picks between them by the sampled statistics of this random
  // log (both were seen here, run to run), and either reads only the range. A scan of the log, or of the
  // whole index, is what must never happen.
  expect(text).toMatch(/(Index Scan using|Bitmap Index Scan on) order_mail_log_witness_idx/);
  expect(text).not.toMatch(/Seq Scan on order_mail_log/);
  // Both the provider and the time bound are in the index condition: a range read, not the whole index.
  const condition = text.split('\n').find((line) => line.includes('Index Cond:')) ?? '';
  expect(condition).toMatch(/dispatch_provider = /);
  expect(condition).toMatch(/dispatched_at >= /);
}, 180_000);
