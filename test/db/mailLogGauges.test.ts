// The stuck-sending gauge on real Postgres, with rows laid out in time as a real queue leaves them: a healthy
// backlog under a send rate limit must read 0, a claim left behind while others go by must count, and so
// must a dispatched send that nothing recorded.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { QueryConfig, QueryResultRow } from 'pg';
import { countOverdueSending } from '../../src/db/mailLogGauges';
import type { Database } from '../../src/db/pool';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

const SEND_TIMEOUT_MS = 60_000;
let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('gauges');
});
afterAll(async () => {
  await database.close();
});
afterEach(async () => {
  await database.db.query('DELETE FROM order_mail_log');
});

interface RowAt {
  /** Seconds ago. */
  claimedAgo: number;
  dispatchedAgo?: number;
  /** Settled (sent) this many seconds ago; absent: still 'sending'. */
  settledAgo?: number;
}

/** Inserts orders and their log rows exactly as described, in one statement each. */
async function lay(rows: RowAt[]): Promise<void> {
  const { rows: orders } = await database.db.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
     SELECT 'x', 'x@example.com', 'confirmed', now() FROM generate_series(1, $1) RETURNING id::text AS id`,
    [rows.length],
  );
  await database.db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, dispatched_at,
                                 outcome, provider_message_id, updated_at)
     SELECT o.id, CASE WHEN r.settled IS NULL THEN 'sending' ELSE 'sent' END, 1, 'default/' || o.id || '/run',
            now() - make_interval(secs => r.claimed), now() - make_interval(secs => r.claimed),
            now() - make_interval(secs => r.dispatched),
            CASE WHEN r.settled IS NULL THEN NULL ELSE 'accepted' END, NULL,
            now() - make_interval(secs => COALESCE(r.settled, r.dispatched, r.claimed))
       FROM unnest($1::bigint[], $2::float8[], $3::float8[], $4::float8[])
            AS r(id, claimed, dispatched, settled)
       JOIN orders o ON o.id = r.id`,
    [
      orders.map((order) => order.id),
      rows.map((row) => row.claimedAgo),
      rows.map((row) => row.dispatchedAgo ?? null),
      rows.map((row) => row.settledAgo ?? null),
    ],
  );
}

/**
 * A burst of `count` claims `ago` seconds ago, drained first in first out at `perSecond` (a send rate limit):
 * the first ones sent, the next ones still waiting.
 */
function burst(count: number, ago: number, perSecond: number): RowAt[] {
  return Array.from({ length: count }, (_, index) => {
    const leavesAgo = ago - index / perSecond;
    if (leavesAgo <= 0) return { claimedAgo: ago };
    return { claimedAgo: ago, dispatchedAgo: leavesAgo, settledAgo: Math.max(leavesAgo - 0.2, 0) };
  });
}

describe('countOverdueSending', () => {
  it('a healthy backlog under a rate limit: 1,200 claims 10 minutes ago at 1 send/s, 600 still queued, none stuck', async () => {
    await lay(burst(1_200, 600, 1));
    expect(await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 0,
      undispatched: 0,
    });
  });

  it('a healthy backlog that arrives steadily faster than the rate: none stuck', async () => {
    // For 20 minutes, 2 claims a second and 1 send a second leaving, first in first out: the queue grows
    // to 1,200, the oldest waiting for 10 minutes, and it moves.
    const rows = Array.from({ length: 2_400 }, (_, position): RowAt => {
      const claimedAgo = 1_200 - position / 2;
      const leavesAgo = 1_200 - position;
      if (leavesAgo <= 0) return { claimedAgo };
      return { claimedAgo, dispatchedAgo: leavesAgo, settledAgo: leavesAgo - 0.1 };
    });
    await lay(rows);
    expect(await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 0,
      undispatched: 0,
    });
  });

  it('a claim left behind while the sends after it went by: stuck', async () => {
    // Claimed 10 minutes ago with nothing ahead; 300 later claims have been sent since.
    const later = Array.from({ length: 300 }, (_, index) => ({
      claimedAgo: 590 - index,
      dispatchedAgo: 589 - index,
      settledAgo: 588.5 - index,
    }));
    await lay([{ claimedAgo: 600 }, ...later]);
    expect(await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 0,
      undispatched: 1,
    });
  });

  it('claims left behind inside a healthy backlog: stuck, and only they', async () => {
    // The backlog drained past them: 600 claimed after them have gone, 600 more still wait their turn.
    await lay([{ claimedAgo: 602 }, { claimedAgo: 601 }, ...burst(1_200, 600, 1)]);
    const stuck = await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS });
    expect(stuck).toEqual({ dispatched: 0, undispatched: 2 });
  });

  it('a dispatched send nothing recorded: stuck after the send timeout and a grace, not before', async () => {
    await lay([
      { claimedAgo: 600, dispatchedAgo: 599 },
      { claimedAgo: 60, dispatchedAgo: 59 },
      { claimedAgo: 10 },
    ]);
    expect(await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 1,
      undispatched: 0,
    });
  });

  it('a lone claim older than the send timeout and a grace, nothing else moving: stuck', async () => {
    await lay([{ claimedAgo: 600 }]);
    expect(await countOverdueSending(database.db, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 0,
      undispatched: 1,
    });
  });

  it('with a claim stuck, on a log of 200,000 settled rows, its plans read few rows, by index ranges only', async () => {
    // Every worker runs this at every scrape for as long as a claim stays stuck; on a log of millions of
    // settled rows a scan of the whole table, or of the whole index, is seconds each time. Planned as
    // Postgres plans them, with the statistics of a table that grew over weeks (its rows laid out in no
    // particular order of updated_at, as updates leave them) and the statements' own values.
    // One statement of 200,000 rows: its own transaction, so the pool's statement timeout (meant for the
    // product's statements) does not cut it on a slow machine; nor does the pool's client-side deadline.
    await database.db.transaction(async (client) => {
      await client.query(`SET LOCAL statement_timeout = '120s'`);
      // pg takes a statement's own client-side deadline (query_timeout), though its types leave it out.
      const settled: QueryConfig & { query_timeout: number } = {
        query_timeout: 125_000,
        text: `WITH settled AS (
         INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
         SELECT 'x', 'x@example.com', 'confirmed', now() - make_interval(secs => g * 10)
           FROM generate_series(1, 200000) AS g ORDER BY random()
         RETURNING id, confirmed_at
       )
       INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at,
                                   dispatched_at, outcome, updated_at)
       SELECT id, 'sent', 1, 'default/' || id || '/run', confirmed_at, confirmed_at, confirmed_at, 'accepted',
              confirmed_at + interval '1 second'
         FROM settled`,
      };
      await client.query(settled);
    });
    await lay([{ claimedAgo: 600 }, ...burst(300, 590, 1)]);
    await database.db.query('ANALYZE order_mail_log');
    const statements: { text: string; params: readonly unknown[] }[] = [];
    const recorder: Database = {
      query<Row extends QueryResultRow = QueryResultRow>(text: string, params: readonly unknown[] = []) {
        statements.push({ text, params });
        return database.db.query<Row>(text, params);
      },
      transaction: (work) => database.db.transaction(work),
      close: async () => undefined,
    };
    expect(await countOverdueSending(recorder, { sendTimeoutMs: SEND_TIMEOUT_MS })).toEqual({
      dispatched: 0,
      undispatched: 1,
    });
    const plans: string[] = [];
    for (const statement of statements) {
      const { rows } = await database.db.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${statement.text}`,
        statement.params,
      );
      plans.push(rows.map((row) => row['QUERY PLAN']).join('\n'));
    }
    const plan = plans.join('\n');
    expect(plan).toContain('order_mail_log_state_idx');
    expect(plan).not.toMatch(/Seq Scan on order_mail_log/);
    // And each scan expects the few hundred rows it will find, not a share of the table: a plan made for a
    // third of the table (a bound Postgres cannot see when it plans) becomes a whole-table scan as it grows.
    const expected = [...plan.matchAll(/on order_mail_log\S* +(?:\w+ +)?\(cost=[^ ]+ rows=(\d+)/g)].map((m) =>
      Number(m[1]),
    );
    expect(expected.length).toBeGreaterThan(0);
    expect(Math.max(...expected)).toBeLessThan(20_000);
    // An index condition on updated_at alone is the whole (state, updated_at) index read.
    const conditions = plan.split('\n').filter((line) => line.includes('Index Cond:'));
    expect(conditions.filter((line) => line.includes('updated_at') && !line.includes('state'))).toEqual([]);
  });
});
