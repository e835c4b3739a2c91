// One gauge read per interval however many scrapes come, so slow reads never pile up on the shop's database
// (docs/production.md, "Metrics, health, alerts").

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
