// The gauges read from order_mail_log at each scrape: read-only index range scans. When a 'sending' row
// counts as overdue (a healthy queue never does): docs/design.md §4, "When a row counts as overdue".
import type { Database } from './pool';

/** After a send timed out or ended, the record runs within seconds; a minute covers its retries. */
const OVERDUE_GRACE_MS = 60_000;
/** How much longer than its queue explains a claim may wait before it counts as left behind. */
const QUEUE_EXPLANATION_FACTOR = 2;

export interface OverdueSendingRows {
  /** Passed the fence longer ago than the send timeout + grace: the outcome is unknown and unrecorded. */
  dispatched: number;
  /** Never passed the fence, and waited far longer than its queue explains: no request was made. */
  undispatched: number;
}

export async function countOverdueSending(
  db: Database,
  settings: { sendTimeoutMs: number },
): Promise<OverdueSendingRows> {
  const thresholdSeconds = (settings.sendTimeoutMs + OVERDUE_GRACE_MS) / 1000;
  // First the cheap part, from the rows in 'sending' only: what every scrape of a healthy fleet runs.
  const { rows: heads } = await db.query<{ dispatched: number; since: string | null }>(
    `SELECT count(*) FILTER (WHERE dispatched_at < now() - make_interval(secs => $1))::int AS dispatched,
            (min(claimed_at) FILTER (WHERE dispatched_at IS NULL
                                       AND claimed_at < now() - make_interval(secs => $1)))::text AS since
       FROM order_mail_log WHERE state = 'sending'`,
    [thresholdSeconds],
  );
  const dispatched = heads[0]?.dispatched ?? 0;
  const since = heads[0]?.since ?? null;
  if (since === null) return { dispatched, undispatched: 0 };
  // The lower bound is passed as a value, exact to the microsecond: planned against an unknown bound the
  // statement read the whole table (docs/design.md §4, "When a row counts as overdue").
  const { rows } = await db.query<{ undispatched: number }>(
    `WITH candidates AS (
       SELECT claimed_at FROM order_mail_log
        WHERE state = 'sending' AND dispatched_at IS NULL
          AND claimed_at < now() - make_interval(secs => $1)
     ), active AS (
       -- Every row that may have been waiting at a candidate's claim, or left the queue after it. A row
       -- leaves the queue when it passes the fence, or when it settles without passing it. The settled
       -- states are the CHECK's others, named so that the index serves them.
       SELECT claimed_at, dispatched_at AS left_at FROM order_mail_log WHERE state = 'sending'
       UNION ALL
       SELECT claimed_at, COALESCE(dispatched_at, updated_at) FROM order_mail_log
        WHERE state IN ('sent', 'failed') AND updated_at > $3::timestamptz
     ), events AS (
       -- A sweep over time: a claim joins the queue, leaving it leaves; a probe reads the queue at a
       -- candidate's claim. At one instant leaves come first, then claims (those of the same instant count as
       -- ahead: which went first is not known), then the probe, which does not count its own claim.
       SELECT claimed_at AS at, 1 AS kind, 1 AS joined, 0 AS leaving FROM active
       UNION ALL SELECT left_at, 0, -1, 1 FROM active WHERE left_at IS NOT NULL
       UNION ALL SELECT claimed_at, 2, 0, 0 FROM candidates
     ), swept AS (
       SELECT at, kind,
              sum(joined) OVER running AS ahead,
              sum(leaving) OVER running AS left_before,
              sum(leaving) OVER () AS left_total
         FROM events
       WINDOW running AS (ORDER BY at, kind ROWS UNBOUNDED PRECEDING)
     ), probes AS (
       SELECT extract(epoch FROM now() - at)::float8 AS waited, (ahead - 1)::float8 AS ahead,
              (left_total - left_before)::float8 AS left_since
         FROM swept WHERE kind = 2
     )
     SELECT count(*)::int AS undispatched FROM probes
      WHERE CASE WHEN left_since = 0 THEN ahead = 0
                 ELSE waited > $1 + $2 * ahead * waited / left_since END`,
    [thresholdSeconds, QUEUE_EXPLANATION_FACTOR, since],
  );
  return { dispatched, undispatched: rows[0]?.undispatched ?? 0 };
}
