// A stored webhook event makes the run ask its lookup early; it never settles alone. Why the worker, not the
// receiver, signals: docs/design.md §5, "What counts as evidence".
import type { Database } from '../db/pool';

export interface EarlyLookups {
  /** Reads and signals once now (tests); the interval does the same. */
  poll(): Promise<number>;
  stop(): Promise<void>;
}

/** How many events one read takes at most; more wait for the next read. */
const BATCH = 500;

export async function startEarlyLookups(options: {
  db: Database;
  /** Signals the run of this order (its workflow id); a run that is not open is no error. */
  signal(orderId: string): Promise<void>;
  intervalMs: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
}): Promise<EarlyLookups> {
  const log = options.log ?? (() => undefined);
  // Events from now on: one stored before this worker started is no news to a run that has waited since.
  const { rows } = await options.db.query<{ last: string }>(
    'SELECT coalesce(max(id), 0)::text AS last FROM order_mail_provider_events',
  );
  let last = rows[0]?.last ?? '0';
  let running: Promise<number> | null = null;

  async function pollOnce(): Promise<number> {
    const { rows: events } = await options.db.query<{ id: string; orderId: string | null }>(
      `SELECT e.id::text AS id, l.order_id::text AS "orderId"
         FROM order_mail_provider_events AS e
         LEFT JOIN order_mail_log AS l
           ON l.order_id = e.order_id AND l.state = 'sending' AND l.dispatched_at IS NOT NULL
          AND l.dispatch_send_key = e.send_key
        WHERE e.id > $1 AND e.event_type IN ('accepted', 'delivered')
        ORDER BY e.id
        LIMIT ${BATCH}`,
      [last],
    );
    const lastRow = events.at(-1);
    if (lastRow !== undefined) last = lastRow.id;
    const orders = [...new Set(events.flatMap((event) => (event.orderId === null ? [] : [event.orderId])))];
    let signalled = 0;
    for (const orderId of orders) {
      try {
        await options.signal(orderId);
        signalled += 1;
      } catch (error) {
        log('info', 'Could not signal a run about its provider event; it asks when its settle delay ends', {
          orderId,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    return signalled;
  }

  function poll(): Promise<number> {
    running ??= pollOnce().finally(() => {
      running = null;
    });
    return running;
  }

  const timer = setInterval(() => {
    poll().catch((error: unknown) =>
      log('warn', 'Could not read new provider events for early lookups', {
        error: error instanceof Error ? error.message : String(error),
      }),
    );
  }, options.intervalMs);
  timer.unref();
  return {
    poll,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
