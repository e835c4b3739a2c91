// The gauges read from Postgres (src/db/mailLogGauges.ts) are computed at most once per interval, however many
// scrapes arrive: several Prometheus replicas, a dashboard's refresh and a curl at once would otherwise each run
// the query, and a slow one would pile up on the shop's database. Scrapes that arrive while it runs wait for
// that one run (single flight); scrapes within the interval after it serve its values.

export interface GaugeRefresher {
  /** Resolves once the gauges are at most `intervalMs` old; rejects with the run's failure. */
  refresh(): Promise<void>;
}

export function singleFlightRefresher(
  compute: () => Promise<void>,
  intervalMs: number,
  now: () => number = () => performance.now(),
): GaugeRefresher {
  let running: Promise<void> | null = null;
  // When the last run that succeeded started: its values describe that moment.
  let freshSince = Number.NEGATIVE_INFINITY;
  return {
    refresh() {
      if (running !== null) return running;
      if (now() - freshSince < intervalMs) return Promise.resolve();
      const startedAt = now();
      running = compute()
        .then(() => {
          freshSince = startedAt;
        })
        .finally(() => {
          running = null;
        });
      return running;
    },
  };
}
