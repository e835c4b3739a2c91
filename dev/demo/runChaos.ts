// The faults a run does to the system while its orders flow, beside the sandbox's own: a worker SIGKILLed
// every so often and replaced, the mail API refusing connections for a while, Postgres and Temporal each
// restarted once at a share of the orders done, the failover run's primary outage, and the acts on a Temporal
// cluster (clusterChaos.ts). One restart at a time.
import { startClusterChaos, type ClusterChaos } from './clusterChaos';
import type { FailoverTarget } from './failoverTarget';
import type { ChaosCounts } from './report/facts';
import type { RunOptions } from './runOptions';
import type { Stack } from './stack';
import type { WorkerFleet } from './workerFleet';
import type { OutageWindow } from './sendOutage';

const WORKER_RESTART_DELAY_MS = 500;

export interface Chaos {
  /** Called with the share of orders done; fires the one-off restarts when their time has come. */
  onProgress(share: number): void;
  /** The acts on the Temporal cluster, in a --cluster run. */
  cluster: ClusterChaos | null;
  status(): string;
  counts(workers: WorkerFleet): ChaosCounts;
  /** --send-outage: when it was, once it is over; else null. */
  sendOutage(): OutageWindow | null;
  stop(): Promise<void>;
}

export function startChaos(
  options: RunOptions,
  stack: Stack,
  workers: WorkerFleet,
  random: () => number,
  say: (line: string) => void,
  /** Resolves once every order has been started: --send-outage begins then, so no order starts after it. */
  startsDone: Promise<unknown> = Promise.resolve(),
): Chaos {
  let stopped = false;
  const pending = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>): void => {
    const guarded = work.catch((error: unknown) =>
      say(`chaos: ${error instanceof Error ? error.message : String(error)}`),
    );
    pending.add(guarded);
    void guarded.finally(() => pending.delete(guarded));
  };
  const counts = { postgresRestarts: 0, temporalRestarts: 0, refusedWindows: 0 };
  let restarting: string | null = null;
  const cluster =
    options.cluster === null || stack.cluster === null
      ? null
      : startClusterChaos({
          cluster: stack.cluster,
          settings: options.cluster,
          random,
          othersBusy: () => restarting !== null,
          say,
        });

  const every = (ms: number, action: () => void): NodeJS.Timeout | null =>
    ms > 0 ? setInterval(() => !stopped && action(), ms) : null;
  const timers = [
    every(options.killEveryMs, () => track(workers.killOneAndReplace(WORKER_RESTART_DELAY_MS))),
    every(options.refuseEveryMs, () => {
      counts.refusedWindows += 1;
      track(stack.mail.refuseConnectionsFor(options.refuseForMs));
    }),
  ];
  const once = (at: number | null, restart: (() => Promise<void>) | null, what: 'Postgres' | 'Temporal') => {
    let fired = false;
    return (share: number): void => {
      if (fired || stopped || at === null || share < at || restart === null || restarting !== null) return;
      // Not while an act on the cluster is under way: one thing restarts at a time.
      if (cluster?.busy() === true) return;
      fired = true;
      restarting = what;
      const startedAt = Date.now();
      track(
        restart()
          .then(() => {
            if (what === 'Postgres') counts.postgresRestarts += 1;
            else counts.temporalRestarts += 1;
            say(`chaos: ${what} restarted (down ${Math.round((Date.now() - startedAt) / 100) / 10} s)`);
          })
          .finally(() => {
            restarting = null;
          }),
      );
    };
  };
  // --failover: the primary goes down once, a while after the first start.
  const outage =
    options.failover === null || options.failover.outageForMs <= 0
      ? null
      : setTimeout(() => {
          if (stopped) return;
          track((stack.mail as FailoverTarget).primaryOutage(options.failover!.outageForMs, say));
        }, options.failover.outageAtMs);
  let sendOutageWindow: OutageWindow | null = null;
  const stopping = new AbortController();
  if (options.sendOutage !== null) {
    const { forMs } = options.sendOutage;
    const mail = stack.mail;
    if (mail.dropEverySendFor === undefined) say('chaos: --send-outage needs the HTTP sandbox; skipped');
    else {
      track(
        startsDone.then(async () => {
          if (stopped) return;
          sendOutageWindow = (await mail.dropEverySendFor?.(forMs, say, stopping.signal)) ?? null;
        }),
      );
    }
  }
  // --receiver-outage-*: the webhook receiver goes down once, a while after the first start.
  const receiverOutage = options.verification.receiverOutage;
  const receiverDown =
    receiverOutage === null
      ? null
      : setTimeout(() => {
          if (stopped) return;
          say(`chaos: webhook receiver down for ${Math.round(receiverOutage.forMs / 1000)} s`);
          const startedAt = Date.now();
          track(
            stack.mail.receiverOutage(receiverOutage.forMs).then(() => {
              say(`chaos: webhook receiver back (down ${Math.round((Date.now() - startedAt) / 1000)} s)`);
            }),
          );
        }, receiverOutage.atMs);
  const postgres = once(options.restartPostgresAt, stack.restartPostgres, 'Postgres');
  const temporal = once(options.restartTemporalAt, stack.restartTemporal, 'Temporal');
  if (options.restartPostgresAt !== null && stack.restartPostgres === null)
    say('chaos: Postgres restart skipped (DATABASE_URL is not ours to restart)');
  if (options.restartTemporalAt !== null && stack.restartTemporal === null)
    say('chaos: Temporal restart skipped (TEMPORAL_ADDRESS is not ours to restart)');

  return {
    onProgress(share) {
      postgres(share);
      temporal(share);
    },
    cluster,
    status: () =>
      restarting !== null ? `${restarting} restarting` : cluster?.busy() === true ? cluster.status() : '',
    counts: (fleet) => ({
      workerKills: fleet.counts().kills,
      workerRestarts: fleet.counts().restarts,
      workerExits: fleet.counts().exitedOnTheirOwn,
      ...counts,
    }),
    sendOutage: () => sendOutageWindow,
    async stop() {
      stopped = true;
      stopping.abort();
      for (const timer of timers) if (timer !== null) clearInterval(timer);
      if (outage !== null) clearTimeout(outage);
      if (receiverDown !== null) clearTimeout(receiverDown);
      await cluster?.stop();
      while (pending.size > 0) await Promise.all([...pending]);
      await stack.mail.whenListening().catch(() => undefined);
    },
  };
}
