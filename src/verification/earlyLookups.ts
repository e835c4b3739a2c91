// A webhook only triggers an early lookup; it never settles alone (issue 22; docs/design.md §5, "What counts as
// evidence"). The webhook receiver faces the internet and holds nothing but Postgres (src/webhooks/
// webhookServer.ts), so it does not talk to Temporal. Instead each worker reads the events the receiver stored
// since it last looked, and for an event of an order whose log row is `sending` with this very send key
// dispatched (an attempt whose outcome a run is waiting to learn), it signals that order's run
// (PROVIDER_EVENT_SIGNAL). The run's verification then asks the lookup at once (src/workflows/commands.ts),
// judged by the same rules as ever: a "found" settles the attempt as verified by the lookup; a "not found"
// before the settle delay has passed is only "wait" (src/evidence/evidenceRules.ts), so the early ask can make
// an unknown send settle sooner, never differently.
//
// Best effort, and cheap: one range read of the events' primary key every interval. A missed event (a worker
// that was down, an event whose id committed after a higher one was read, a signal that failed) only means the
// run asks when its settle delay ends, as it would without this. Several workers each signal: a run acts on a
// signal only while it waits, at most a few times per attempt.
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
