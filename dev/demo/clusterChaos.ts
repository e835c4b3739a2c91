// Cluster chaos (chaos --cluster): acts on the hosts of the Temporal cluster (dev/stack/temporalCluster.ts)
// at random moments while the orders flow, one act at a time, never while the runner restarts Postgres:
//   - a history host SIGKILLed, down a while, started again: its shards move to the other host and back;
//   - a matching host likewise: its task queue partitions move, tasks held in its memory are dispatched again;
//   - a frontend restarted (SIGTERM, start): the clients it served reconnect through the balancer;
//   - a rolling restart: every host restarted in turn, each serving before the next, as in an upgrade.
// The acts come from a bag holding each of the four, refilled when empty, so each kind recurs evenly.
import { setTimeout as sleep } from 'node:timers/promises';
import type { RunningTemporalCluster } from '../stack/temporalCluster';
import type { ClusterSettings } from './runOptions';

export type ClusterActKind = 'history-kill' | 'matching-kill' | 'frontend-restart' | 'rolling-restart';
const ACT_KINDS: readonly ClusterActKind[] = [
  'history-kill',
  'matching-kill',
  'frontend-restart',
  'rolling-restart',
];

export interface ClusterActRecord {
  kind: ClusterActKind;
  /** The hosts the act stopped, in order. */
  hosts: string[];
  startedAt: string;
  seconds: number;
  /** Null when the act went through; what went wrong otherwise. */
  error: string | null;
}

export interface ClusterChaosCounts {
  historyKills: number;
  matchingKills: number;
  frontendRestarts: number;
  rollingRestarts: number;
  /** Hosts restarted by the rolling restarts. */
  rolledHosts: number;
  /** Every host stop the acts made: kills plus restarts (each rolled host counts once). */
  serviceKillsOrRestarts: number;
  /** Acts that did not finish (a host that did not come back in time); the run goes on. */
  failedActs: number;
  acts: ClusterActRecord[];
}

export interface ClusterChaos {
  /** What the cluster is going through now, for the progress line; '' when nothing. */
  status(): string;
  /** An act is under way (the runner waits before it restarts Postgres). */
  busy(): boolean;
  counts(): ClusterChaosCounts;
  /** No new acts; waits until the act under way is done, so the cluster is whole again. */
  stop(): Promise<void>;
}

export function startClusterChaos(options: {
  cluster: RunningTemporalCluster;
  settings: ClusterSettings;
  random: () => number;
  /** Something else is being restarted (Postgres): wait. */
  othersBusy: () => boolean;
  say: (line: string) => void;
}): ClusterChaos {
  const { cluster, settings, random, say } = options;
  const acts: ClusterActRecord[] = [];
  let bag: ClusterActKind[] = [];
  let current: string | null = null;
  let stopped = false;
  const wake = new AbortController();

  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const hostsOf = (service: string) =>
    cluster.hosts.filter((host) => host.service === service).map((host) => host.name);
  const nextKind = (): ClusterActKind => {
    if (bag.length === 0) bag = [...ACT_KINDS];
    const index = Math.floor(random() * bag.length);
    return bag.splice(index, 1)[0]!;
  };
  const pause = (mean: number) => Math.round(mean * (0.5 + random()));
  const downFor = () => Math.round(settings.downForMs * (1 / 3 + (2 / 3) * random()));

  const perform = async (kind: ClusterActKind, hosts: string[]): Promise<void> => {
    switch (kind) {
      case 'history-kill':
      case 'matching-kill': {
        const host = pick(hostsOf(kind === 'history-kill' ? 'history' : 'matching'));
        hosts.push(host);
        current = `${host} killed`;
        await cluster.kill(host);
        await sleep(downFor());
        current = `${host} starting`;
        await cluster.start(host);
        return;
      }
      case 'frontend-restart': {
        const host = pick(hostsOf('frontend'));
        hosts.push(host);
        current = `${host} restarting`;
        await cluster.restart(host);
        return;
      }
      case 'rolling-restart':
        current = 'rolling restart';
        await cluster.rollingRestart((host) => {
          hosts.push(host);
          current = `rolling restart (${hosts.length}/${cluster.hosts.length} hosts)`;
        });
        return;
    }
  };

  const loop = (async () => {
    if (settings.actEveryMs <= 0) return;
    for (;;) {
      await sleep(pause(settings.actEveryMs), undefined, { signal: wake.signal }).catch(() => undefined);
      while (!stopped && options.othersBusy()) await sleep(500);
      if (stopped) return;
      const kind = nextKind();
      const record: ClusterActRecord = {
        kind,
        hosts: [],
        startedAt: new Date().toISOString(),
        seconds: 0,
        error: null,
      };
      const startedAt = Date.now();
      try {
        await perform(kind, record.hosts);
      } catch (error) {
        record.error = error instanceof Error ? error.message.split('\n')[0]! : String(error);
      }
      record.seconds = Math.round((Date.now() - startedAt) / 100) / 10;
      acts.push(record);
      current = null;
      say(
        `chaos: cluster ${kind} (${record.hosts.join(', ')}) in ${record.seconds} s` +
          (record.error === null ? '' : ` — FAILED: ${record.error}`),
      );
    }
  })();

  return {
    status: () => current ?? '',
    busy: () => current !== null,
    counts() {
      const done = acts.filter((act) => act.error === null);
      const of = (kind: ClusterActKind) => done.filter((act) => act.kind === kind);
      const rolledHosts = of('rolling-restart').reduce((total, act) => total + act.hosts.length, 0);
      const counts = {
        historyKills: of('history-kill').length,
        matchingKills: of('matching-kill').length,
        frontendRestarts: of('frontend-restart').length,
        rollingRestarts: of('rolling-restart').length,
        rolledHosts,
      };
      return {
        ...counts,
        serviceKillsOrRestarts:
          counts.historyKills + counts.matchingKills + counts.frontendRestarts + rolledHosts,
        failedActs: acts.length - done.length,
        acts: [...acts],
      };
    },
    async stop() {
      stopped = true;
      wake.abort();
      await loop;
    },
  };
}
