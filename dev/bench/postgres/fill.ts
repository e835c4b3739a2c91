// Fills the bench database with the history of a shop that has sent `target` confirmation mails: orders, one
// order_mail_log row each, and three order_mail_attempts rows per order on average, in a realistic mix of
// states. All in SQL (generate_series, INSERT … SELECT), a chunk per transaction, so 10 million orders take
// minutes rather than hours.
//
// The shop takes orders at a constant rate (10 million in 90 days, 1.3 per second), and the table GROWS
// BACKWARDS in time: the newest order is always about now, and each fill adds older history below it. Order
// ids follow time (older orders, smaller ids), as in a real shop. So at every size the reconciliation
// sweep's look-back window (7 days) holds the orders of the last 7 days, as it would in production, and what
// grows is the history behind it.
import type { Database } from '../../../src/db/pool';

/** The newest filled order's id; orders the measurements create get ids above it. */
export const NEWEST_FILLED_ID = 50_000_000;
/** Seconds between two orders: 90 days for 10 million. */
export const SECONDS_PER_ORDER = (90 * 24 * 3600) / 10_000_000;
const CHUNK = 250_000;

/** How the states are mixed, from a hash of the order id (parts per 10,000). */
export const STATE_MIX = [
  { upTo: 9_750, state: 'sent', outcome: 'accepted', httpStatus: 202 },
  { upTo: 9_800, state: 'sent', outcome: 'unknown', httpStatus: null },
  { upTo: 9_810, state: 'sent', outcome: 'resolved', httpStatus: null },
  { upTo: 9_910, state: 'failed', outcome: 'rejected', httpStatus: 422 },
  { upTo: 9_960, state: 'failed', outcome: 'not_sent', httpStatus: 503 },
  { upTo: 10_000, state: 'sent', outcome: 'accepted', httpStatus: 202 },
] as const;

export async function filledCount(db: Database): Promise<number> {
  const { rows } = await db.query<{ count: string }>(
    `SELECT count(*)::text AS count FROM order_mail_log WHERE order_id <= $1`,
    [NEWEST_FILLED_ID],
  );
  return Number(rows[0]?.count ?? 0);
}

/**
 * Adds older history until `target` orders (with their log rows and attempts) are filled. `anchor` is "now"
 * for the timeline, fixed for the whole run so that every fill continues the same one.
 */
export async function fillTo(
  db: Database,
  target: number,
  anchor: Date,
  progress: (filled: number) => void,
): Promise<void> {
  let filled = await filledCount(db);
  while (filled < target) {
    const count = Math.min(CHUNK, target - filled);
    await fillChunk(db, filled, count, anchor);
    filled += count;
    progress(filled);
  }
  // Fresh statistics and visibility map, as autovacuum would have them on a table that grew over months.
  for (const table of ['orders', 'order_mail_log', 'order_mail_attempts']) {
    await db.query(`VACUUM (ANALYZE) ${table}`);
  }
  await db.query('CHECKPOINT');
}

/** Orders of rank [from, from + count): rank 0 is the newest; its id is NEWEST_FILLED_ID - rank. */
async function fillChunk(db: Database, from: number, count: number, anchor: Date): Promise<void> {
  const mix = (value: (part: (typeof STATE_MIX)[number]) => string): string =>
    `CASE ${STATE_MIX.map((part) => `WHEN h < ${part.upTo} THEN ${value(part)}`).join(' ')} END`;
  await db.transaction(async (client) => {
    // One statement per table, all rows of the chunk computed from the rank.
    await client.query(
      `INSERT INTO orders (id, customer_name, customer_email, status, ordered_at, confirmed_at)
       SELECT $3::bigint - r, '山田 太郎', 'customer' || r || '@example.com', 'confirmed',
              $4::timestamptz - make_interval(secs => r * $5::double precision) - interval '30 seconds',
              $4::timestamptz - make_interval(secs => r * $5::double precision)
         FROM generate_series($1::bigint, $1::bigint + $2::bigint - 1) AS r`,
      [from, count, NEWEST_FILLED_ID, anchor, SECONDS_PER_ORDER],
    );
    await client.query(
      `WITH base AS (
         SELECT $3::bigint - r AS id,
                $4::timestamptz - make_interval(secs => r * $5::double precision) AS confirmed_at,
                ((($3::bigint - r) * 2654435761) % 10000)::int AS h,
                1 + ((($3::bigint - r) * 40503) % 5)::int AS attempts
           FROM generate_series($1::bigint, $1::bigint + $2::bigint - 1) AS r
       ), mixed AS (
         SELECT base.*, ${mix((part) => `'${part.state}'`)} AS state,
                ${mix((part) => `'${part.outcome}'`)} AS outcome,
                ${mix((part) => `${part.httpStatus ?? 'NULL'}::int`)} AS http_status
           FROM base
       )
       INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at,
                                   resend_count, dispatched_at, outcome, unknown_policy, provider_message_id,
                                   http_status, last_error, created_at, updated_at)
       SELECT id, state, attempts, 'default/' || id || '/' || md5(id::text || '/' || attempts),
              confirmed_at + make_interval(secs => attempts * 10), confirmed_at + make_interval(secs => attempts * 10),
              0, confirmed_at + make_interval(secs => attempts * 10 + 1), outcome,
              CASE WHEN outcome = 'unknown' THEN 'assume-sent' END,
              CASE WHEN outcome = 'accepted' THEN 'sbx_' || substr(md5(id::text), 1, 24) END,
              http_status,
              CASE outcome WHEN 'rejected' THEN 'HTTP 422: the recipient address was rejected by the provider'
                          WHEN 'not_sent' THEN 'HTTP 503: Service Unavailable (gave up after ' || attempts || ' attempts)'
                          WHEN 'unknown' THEN 'the connection closed after the request was sent' END,
              confirmed_at + interval '1 second', confirmed_at + make_interval(secs => attempts * 10 + 2)
         FROM mixed`,
      [from, count, NEWEST_FILLED_ID, anchor, SECONDS_PER_ORDER],
    );
    // Every attempt of the order: the earlier ones were not sent (503), the last one is the row's outcome
    // (an operator's 'resolved' settles the row, not the attempt: that attempt ended unknown).
    await client.query(
      `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                        finished_at, state, outcome, unknown_policy, provider_message_id,
                                        http_status, error, recorded_by)
       SELECT log.order_id, a, 'default/' || log.order_id || '/' || md5(log.order_id::text || '/' || a), 0,
              log.created_at + make_interval(secs => a * 10), log.created_at + make_interval(secs => a * 10 + 1),
              log.created_at + make_interval(secs => a * 10 + 1.5),
              CASE WHEN a = log.attempts THEN log.state ELSE 'failed' END,
              CASE WHEN a < log.attempts THEN 'not_sent' WHEN log.outcome = 'resolved' THEN 'unknown' ELSE log.outcome END,
              CASE WHEN a = log.attempts AND log.outcome IN ('unknown', 'resolved') THEN 'assume-sent' END,
              CASE WHEN a = log.attempts THEN log.provider_message_id END,
              CASE WHEN a = log.attempts THEN log.http_status ELSE 503 END,
              CASE WHEN a = log.attempts THEN log.last_error ELSE 'HTTP 503: Service Unavailable' END,
              'order-mail-worker 4242@worker-7'
         FROM order_mail_log AS log, generate_series(1, log.attempts) AS a
        WHERE log.order_id BETWEEN $1::bigint - $2::bigint + 1 AND $1::bigint`,
      [NEWEST_FILLED_ID - from, count],
    );
  });
}
