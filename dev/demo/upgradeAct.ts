// The upgrade chaos run (`npm run chaos -- --upgrade-at S --upgrade-every S`): orders flow under the usual
// faults on unversioned workers (2.0's way); at S the workers of build N (the same workflow code) start as a
// Worker Deployment Version and it becomes current: 2.0's open runs move to it at their next workflow task, as
// Temporal moves unversioned runs, and replay there. Once none is open (and one period on), build N+1, whose
// mail workflow issues one more command (upgrade/nextBuildWorkflows.ts), starts and becomes current; one period
// later the current version goes back to N. Every build's workers poll to the end, so each pinned run finishes
// on its build; they are killed now and then during the roll. The facts: the open runs per build and state at
// each switch, the runs per build, and what each history shows: no non-determinism failure, no run that went
// from one versioned build to another.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Database } from '../../src/db/pool';
import type { OldRunsAtSwitch, UpgradeFacts, UpgradeSwitch } from './report/facts';
import type { UpgradeSettings } from './runOptions';
import { bundleWorkflows } from './workerEnvironment';
import { startWorkerFleet, type WorkerFleet } from './workerFleet';

const BUILDS = { n: 'n', next: 'n1' } as const;
const STATES = ['sending', 'unknown', 'failed', 'held'] as const;
/** How long N+1 waits for 2.0's runs to close: an incompatible build must not be current while one is open. */
const UNVERSIONED_DRAIN_BOUND_MS = 300_000;
/** Tries of one switch while Temporal restarts or the new build's pollers are not yet known (2 s apart). */
const SWITCH_TRIES = 45;
const HISTORY_READS_AT_ONCE = 8;
const WORKER_RESTART_DELAY_MS = 500;
const DESCRIBES_AT_ONCE = 16;
const SEND_ACTIVITY = 'sendOrderMail';

const EventType = temporal.api.enums.v1.EventType;
const NON_DETERMINISTIC =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR;

export interface UpgradeAct {
  /** Resolves once the three switches were made (or one failed: the facts say so). */
  switched(): Promise<void>;
  /** After every order finished: the runs per build and what their histories show. */
  facts(orderIds: string[]): Promise<UpgradeFacts>;
  /** Stops the builds' workers. */
  stop(): Promise<void>;
}

export function startUpgradeAct(options: {
  settings: UpgradeSettings;
  client: Client;
  db: Database;
  taskQueue: string;
  workerEnv: Record<string, string>;
  workers: number;
  killEveryMs: number;
  runDirectory: string;
  random: () => number;
  startedAt: number;
  say: (line: string) => void;
}): UpgradeAct {
  const { settings, client, say } = options;
  const namespace = client.options.namespace;
  const since = () => Date.now() - options.startedAt;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
  const fleets: WorkerFleet[] = [];
  const extraFleets: WorkerFleet[] = [];
  const switches: UpgradeSwitch[] = [];
  let failure: string | null = null;
  let stopped = false;
  let unversionedDrainedAtMs: number | null = null;

  const nextBundle = bundleWorkflows(options.runDirectory, {
    workflowsPath: require.resolve('./upgrade/nextBuildWorkflows'),
    name: 'workflow-bundle-n1',
  });
  nextBundle.catch(() => undefined);

  const startBuild = async (buildId: string, bundlePath: string | null): Promise<WorkerFleet> => {
    const logDirectory = path.join(options.runDirectory, `build-${buildId}`);
    await mkdir(logDirectory, { recursive: true });
    const fleet = startWorkerFleet({
      size: options.workers,
      env: {
        ...options.workerEnv,
        TEMPORAL_WORKER_DEPLOYMENT_NAME: settings.deploymentName,
        TEMPORAL_WORKER_BUILD_ID: buildId,
        ...(bundlePath === null ? {} : { WORKFLOW_BUNDLE_PATH: bundlePath }),
      },
      logDirectory,
      random: options.random,
    });
    extraFleets.push(fleet);
    await fleet.whenAllStarted();
    // Killed now and then only once polling: a worker killed before it started fails the start.
    fleets.push(fleet);
    return fleet;
  };

  const version = (buildId: string) => `${settings.deploymentName}:${buildId}`;
  const count = async (query: string): Promise<number> => (await client.workflow.count(query)).count;
  const openRuns = `TaskQueue = '${options.taskQueue}' AND WorkflowType = 'orderConfirmationMail' AND ExecutionStatus = 'Running'`;
  const ofBuild = (buildId: string | null) =>
    buildId === null
      ? 'TemporalWorkerDeploymentVersion IS NULL'
      : `TemporalWorkerDeploymentVersion = '${version(buildId)}'`;

  // Where the open runs of the build being left are, by their rows; a dispatched row is mid-send while its
  // send activity is open, else its run waits out the settle delay (or asks the provider).
  const placeOldRuns = async (buildId: string | null): Promise<OldRunsAtSwitch> => {
    const begun = Date.now();
    const ids: string[] = [];
    for await (const run of client.workflow.list({ query: `${openRuns} AND ${ofBuild(buildId)}` })) {
      ids.push(run.workflowId);
    }
    const rows = await options.db.query<{
      order_id: string;
      state: string;
      outcome: string | null;
      dispatched: boolean;
    }>(
      `SELECT order_id::text, state, outcome, dispatched_at IS NOT NULL AS dispatched
         FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
      [ids.filter((id) => /^[0-9]+$/.test(id))],
    );
    const placed: OldRunsAtSwitch = {
      open: ids.length,
      claimed: 0,
      midSend: 0,
      settleDelay: 0,
      notSentBackoff: 0,
      other: 0,
      countedInMs: 0,
    };
    const dispatched: string[] = [];
    for (const row of rows.rows) {
      if (row.state === 'sending' && !row.dispatched) placed.claimed += 1;
      else if (row.state === 'sending') dispatched.push(row.order_id);
      else if (row.state === 'failed' && row.outcome === 'not_sent') placed.notSentBackoff += 1;
    }
    await Promise.all(
      Array.from({ length: DESCRIBES_AT_ONCE }, async () => {
        for (let orderId = dispatched.shift(); orderId !== undefined; orderId = dispatched.shift()) {
          const description = await client.workflow
            .getHandle(orderId)
            .describe()
            .catch(() => null);
          if (description === null) continue;
          const sending = description.raw.pendingActivities?.some(
            (activity) => activity.activityType?.name === SEND_ACTIVITY,
          );
          if (sending) placed.midSend += 1;
          else placed.settleDelay += 1;
        }
      }),
    );
    placed.other = placed.open - placed.claimed - placed.midSend - placed.settleDelay - placed.notSentBackoff;
    placed.countedInMs = Date.now() - begun;
    return placed;
  };

  const snapshot = async (to: string, from: string, oldRuns: OldRunsAtSwitch): Promise<UpgradeSwitch> => {
    const openByBuild: UpgradeSwitch['openByBuild'] = {};
    for (const buildId of [null, BUILDS.n, BUILDS.next]) {
      const perState: Record<string, number> = {};
      for (const state of STATES) {
        perState[state] = await count(`${openRuns} AND ${ofBuild(buildId)} AND OrderMailState = '${state}'`);
      }
      openByBuild[buildId ?? 'unversioned'] = perState;
    }
    const rows = await options.db.query<{ claimed: string; mid_send: string; not_sent: string }>(
      `SELECT count(*) FILTER (WHERE state = 'sending' AND dispatched_at IS NULL) AS claimed,
              count(*) FILTER (WHERE state = 'sending' AND dispatched_at IS NOT NULL) AS mid_send,
              count(*) FILTER (WHERE state = 'failed' AND outcome = 'not_sent') AS not_sent
         FROM order_mail_log`,
    );
    const row = rows.rows[0]!;
    return {
      to,
      atMs: since(),
      openByBuild,
      rows: { claimed: Number(row.claimed), midSend: Number(row.mid_send), notSent: Number(row.not_sent) },
      from,
      oldRuns,
    };
  };

  const setCurrent = async (buildId: string, from: string | null): Promise<void> => {
    // Counted just before the switch, so the runs are those the switch meets (again while Temporal restarts).
    let oldRuns: OldRunsAtSwitch | null = null;
    for (let tries = 1; oldRuns === null; tries++) {
      oldRuns = await placeOldRuns(from).catch((error: unknown) => {
        if (tries >= SWITCH_TRIES || stopped) throw error;
        return null;
      });
      if (oldRuns === null) await sleep(2_000);
    }
    say(
      `upgrade: before ${version(buildId)}, open runs of ${from ?? 'unversioned'}: ${oldRuns.claimed} claimed, ` +
        `${oldRuns.midSend} mid-send, ${oldRuns.settleDelay} in a settle delay, ${oldRuns.notSentBackoff} in a ` +
        `not-sent backoff, ${oldRuns.other} other (counted in ${Math.round(oldRuns.countedInMs / 100) / 10} s)`,
    );
    for (let tries = 1; ; tries++) {
      try {
        await client.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: settings.deploymentName,
          buildId,
          identity: 'order-mail-chaos-upgrade',
        });
        break;
      } catch (error) {
        if (tries >= SWITCH_TRIES || stopped) throw error;
        await sleep(2_000);
      }
    }
    const shot = await snapshot(version(buildId), from ?? 'unversioned', oldRuns);
    switches.push(shot);
    say(
      `upgrade: ${version(buildId)} is current at ${Math.round(shot.atMs / 1000)} s; ${describeOpen(shot)}`,
    );
  };

  const kills = setInterval(
    () => {
      const alive = fleets.filter((fleet) => fleet.aliveCount() > 0);
      if (stopped || alive.length === 0) return;
      void alive[Math.floor(options.random() * alive.length)]!.killOneAndReplace(
        WORKER_RESTART_DELAY_MS,
      ).catch(() => undefined);
    },
    Math.max(options.killEveryMs, 1_000),
  );
  if (options.killEveryMs <= 0) clearInterval(kills);

  // 2.0's unversioned runs drain on the unversioned workers; when none is open, the report says when.
  const drainWatch = (async () => {
    await sleep(settings.atMs - since());
    while (!stopped && unversionedDrainedAtMs === null) {
      const open = await count(`${openRuns} AND ${ofBuild(null)}`).catch(() => -1);
      if (open === 0 && switches.length > 0) unversionedDrainedAtMs = since();
      else await sleep(2_000);
    }
  })();

  const done = (async () => {
    try {
      await sleep(settings.atMs - since());
      say(`upgrade: starting build ${version(BUILDS.n)}`);
      await startBuild(BUILDS.n, null);
      await setCurrent(BUILDS.n, null);
      await sleep(settings.atMs + settings.everyMs - since());
      const drainBound = Date.now() + UNVERSIONED_DRAIN_BOUND_MS;
      while (unversionedDrainedAtMs === null) {
        if (Date.now() > drainBound) throw new Error("2.0's unversioned runs did not close in time");
        await sleep(1_000);
      }
      say(`upgrade: starting build ${version(BUILDS.next)} (one more command in the mail workflow)`);
      await startBuild(BUILDS.next, await nextBundle);
      await setCurrent(BUILDS.next, BUILDS.n);
      // One period on N+1, however long 2.0's runs took to drain.
      await sleep(switches.at(-1)!.atMs + settings.everyMs - since());
      say(`upgrade: rolling back to ${version(BUILDS.n)}`);
      await setCurrent(BUILDS.n, BUILDS.next);
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      say(`upgrade: FAILED: ${failure}`);
    }
  })();

  return {
    switched: () => done,
    async facts(orderIds) {
      await done;
      const runsByBuild: Record<string, number> = {};
      for (const buildId of [null, BUILDS.n, BUILDS.next]) {
        runsByBuild[buildId ?? 'unversioned'] = await count(
          `TaskQueue = '${options.taskQueue}' AND WorkflowType = 'orderConfirmationMail' AND ${ofBuild(buildId)}`,
        );
      }
      const nondeterminism: string[] = [];
      const crossed: string[] = [];
      let unreadable = 0;
      let movedFromUnversioned = 0;
      const queue = [...orderIds];
      await Promise.all(
        Array.from({ length: HISTORY_READS_AT_ONCE }, async () => {
          for (let orderId = queue.shift(); orderId !== undefined; orderId = queue.shift()) {
            const events = await client.workflow
              .getHandle(orderId)
              .fetchHistory()
              .then((history) => history.events ?? [])
              .catch(() => null);
            if (events === null) {
              unreadable += 1;
              continue;
            }
            const builds: string[] = [];
            for (const event of events) {
              const failed = event.workflowTaskFailedEventAttributes;
              if (
                event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED &&
                failed?.cause === NON_DETERMINISTIC
              )
                nondeterminism.push(orderId);
              const completed = event.workflowTaskCompletedEventAttributes;
              const build = completed?.deploymentVersion?.buildId || 'unversioned';
              if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && builds.at(-1) !== build)
                builds.push(build);
            }
            // 2.0's runs move to N, the first versioned build, which replays them: the one move expected.
            const moves = builds.join(' → ');
            if (moves === `unversioned → ${BUILDS.n}`) movedFromUnversioned += 1;
            else if (builds.length > 1) crossed.push(`${orderId} (${moves})`);
          }
        }),
      );
      return {
        deploymentName: settings.deploymentName,
        minPerState: settings.minPerState,
        switches,
        unversionedDrainedAtMs,
        runsByBuild,
        nondeterminismFailures: [...new Set(nondeterminism)],
        crossedBuilds: crossed,
        movedFromUnversioned,
        historiesUnreadable: unreadable,
        failure,
      };
    },
    async stop() {
      stopped = true;
      clearInterval(kills);
      await drainWatch.catch(() => undefined);
      await Promise.all(extraFleets.map((fleet) => fleet.stop()));
    },
  };
}

function describeOpen(shot: UpgradeSwitch): string {
  return Object.entries(shot.openByBuild)
    .map(
      ([build, states]) => `${build}: ${STATES.map((state) => `${states[state] ?? 0} ${state}`).join(', ')}`,
    )
    .join('; ');
}
