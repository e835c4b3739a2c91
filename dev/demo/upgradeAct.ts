// The upgrade chaos run (`npm run chaos -- --upgrade-at S --upgrade-every S`): orders flow under the usual
// faults on unversioned workers (2.0's way); the workers of build N (the same workflow code) and N+1 (one more
// command in the mail workflow, upgrade/nextBuildWorkflows.ts) start with the run's own, before the first order,
// each as a Worker Deployment Version. At S (or once N is confirmed polling) N becomes current: 2.0's open runs
// move to it at their next workflow task, as Temporal moves unversioned runs, and replay there. Once none is
// open (and one period on), N+1 ramps (a share of new runs starts on it), one period later it becomes current,
// and one period after that the current version goes back to N. Every
// switch is made only after the build it makes current is confirmed polling, so no switch depends on how fast a
// worker starts. Every build's workers poll to the end, so each pinned run finishes on its build; they are killed
// now and then once their build was current. The facts: the open runs per build and state at each switch, the
// runs per build, and what each history shows: no non-determinism failure, no run that went from one versioned
// build to another.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isGrpcServiceError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Database } from '../../src/db/pool';
import type { BuildPolling, OldRunsAtSwitch, UpgradeFacts, UpgradeSwitch } from './report/facts';
import type { UpgradeSettings } from './runOptions';
import { bundleWorkflows } from './workerEnvironment';
import { startWorkerFleet, type WorkerFleet } from './workerFleet';

const BUILDS = { n: 'n', next: 'n1' } as const;
const STATES = ['sending', 'unknown', 'failed', 'held'] as const;
const HISTORY_READS_AT_ONCE = 8;
const WORKER_RESTART_DELAY_MS = 500;
const DESCRIBES_AT_ONCE = 16;
const SEND_ACTIVITY = 'sendOrderMail';
/** Between two looks at a switch's preconditions (pollers, drainage) and two tries of a refused switch. */
const LOOK_EVERY_MS = 1_000;
const GRPC_NOT_FOUND = 5;

const EventType = temporal.api.enums.v1.EventType;
const TaskQueueType = temporal.api.enums.v1.TaskQueueType;
const NON_DETERMINISTIC =
  temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR;

/** Build N+1's workflow code, bundled beside the run's own (start it early: bundling takes a while). */
export function bundleNextBuild(runDirectory: string): Promise<string> {
  return bundleWorkflows(runDirectory, {
    workflowsPath: require.resolve('./upgrade/nextBuildWorkflows'),
    name: 'workflow-bundle-n1',
  });
}

/**
 * Whether the server lists the run's task queue under a Worker Deployment Version for both workflow and activity
 * tasks: it does once a poller of that version on that queue reached it (`temporal worker deployment
 * describe-version` shows the same). False for a version it never heard of.
 */
export async function versionRegistered(
  client: Client,
  where: { deploymentName: string; buildId: string; taskQueue: string },
): Promise<boolean> {
  const answer = await client.workflowService
    .describeWorkerDeploymentVersion({
      namespace: client.options.namespace,
      deploymentVersion: { deploymentName: where.deploymentName, buildId: where.buildId },
    })
    .catch((error: unknown) => {
      if (isGrpcServiceError(error) && Number(error.code) === GRPC_NOT_FOUND) return null;
      throw error;
    });
  const types = new Set(
    (answer?.workerDeploymentVersionInfo?.taskQueueInfos ?? [])
      .filter((queue) => queue.name === where.taskQueue)
      .map((queue) => queue.type),
  );
  return (
    types.has(TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW) && types.has(TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
  );
}

/** The workers of builds N and N+1, started before the first order so that no switch waits for a start. */
export interface UpgradeBuilds {
  /** Resolves once every worker of both builds said it polls; rejects if one exits first. */
  ready(): Promise<void>;
  fleet(buildId: string): WorkerFleet;
  /** From launching a build's workers to every one of them polling. */
  startedInMs(buildId: string): number;
  stop(): Promise<void>;
}

export function startUpgradeBuilds(options: {
  settings: UpgradeSettings;
  workerEnv: Record<string, string>;
  workers: number;
  runDirectory: string;
  nextBundle: Promise<string>;
  random: () => number;
}): UpgradeBuilds {
  const fleets = new Map<string, WorkerFleet>();
  const took = new Map<string, number>();
  let stopped = false;
  const launch = async (buildId: string, bundlePath: string | null): Promise<void> => {
    const logDirectory = path.join(options.runDirectory, `build-${buildId}`);
    await mkdir(logDirectory, { recursive: true });
    if (stopped) return;
    const launchedAt = Date.now();
    const fleet = startWorkerFleet({
      size: options.workers,
      env: {
        ...options.workerEnv,
        TEMPORAL_WORKER_DEPLOYMENT_NAME: options.settings.deploymentName,
        TEMPORAL_WORKER_BUILD_ID: buildId,
        ...(bundlePath === null ? {} : { WORKFLOW_BUNDLE_PATH: bundlePath }),
      },
      logDirectory,
      random: options.random,
    });
    fleets.set(buildId, fleet);
    await fleet.whenAllStarted();
    took.set(buildId, Date.now() - launchedAt);
  };
  const ready = Promise.all([
    launch(BUILDS.n, null),
    options.nextBundle.then((bundlePath) => launch(BUILDS.next, bundlePath)),
  ]).then(() => undefined);
  ready.catch(() => undefined);
  return {
    ready: () => ready,
    fleet(buildId) {
      const fleet = fleets.get(buildId);
      if (fleet === undefined) throw new Error(`build ${buildId} was never started`);
      return fleet;
    },
    startedInMs: (buildId) => took.get(buildId) ?? 0,
    async stop() {
      stopped = true;
      await Promise.all([...fleets.values()].map((fleet) => fleet.stop()));
    },
  };
}

export interface UpgradeAct {
  /** Resolves once the four switches were made (or one failed: the facts say so). */
  switched(): Promise<void>;
  /** After every order finished: the runs per build and what their histories show. */
  facts(orderIds: string[]): Promise<Omit<UpgradeFacts, 'faultsEndedAtMs'>>;
  /** Stops the switches and the kills (the builds' workers are stopped with UpgradeBuilds.stop). */
  stop(): Promise<void>;
}

export function startUpgradeAct(options: {
  settings: UpgradeSettings;
  builds: UpgradeBuilds;
  client: Client;
  db: Database;
  taskQueue: string;
  /** The workers' environment: how long a run can wait for its next workflow task follows from it. */
  workerEnv: Record<string, string>;
  settleDelayMs: number;
  killEveryMs: number;
  random: () => number;
  startedAt: number;
  /** The run's timeout: no switch waits past it. */
  deadline: number;
  say: (line: string) => void;
}): UpgradeAct {
  const { settings, client, builds, say } = options;
  const namespace = client.options.namespace;
  const since = () => Date.now() - options.startedAt;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
  const killable: WorkerFleet[] = [];
  const switches: UpgradeSwitch[] = [];
  let failure: string | null = null;
  let stopped = false;
  let unversionedDrainedAtMs: number | null = null;
  // The longest one open run waits for its next workflow task: a send activity's timeout, a not-sent backoff, a
  // settle delay. Twice that plus N's measured start is how long 2.0's runs may go without one draining.
  const longestWaitMs = Math.max(
    Number(options.workerEnv.SEND_ACTIVITY_TIMEOUT_MS ?? 0),
    Number(options.workerEnv.SEND_RETRY_MAX_MS ?? 0),
    options.settleDelayMs,
  );
  const drainStallBoundMs = () => 2 * longestWaitMs + builds.startedInMs(BUILDS.n);
  const pastDeadline = () => stopped || Date.now() > options.deadline;

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

  const snapshot = async (
    to: string,
    from: string,
    oldRuns: OldRunsAtSwitch,
    polling: BuildPolling,
    atMs: number,
  ): Promise<Omit<UpgradeSwitch, 'kind' | 'percentage' | 'returnedTo'>> => {
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
      atMs,
      openByBuild,
      rows: { claimed: Number(row.claimed), midSend: Number(row.mid_send), notSent: Number(row.not_sent) },
      from,
      oldRuns,
      polling,
    };
  };

  const confirmPolling = async (buildId: string): Promise<BuildPolling> => {
    const due = Date.now();
    const fleet = builds.fleet(buildId);
    const where = { deploymentName: settings.deploymentName, buildId, taskQueue: options.taskQueue };
    // A worker of the build says it polls now, and the server knows the version on the run's task queue.
    while (!(fleet.pollingCount() > 0 && (await versionRegistered(client, where).catch(() => false)))) {
      if (pastDeadline())
        throw new Error(`${version(buildId)} was not seen polling before the run's timeout`);
      await sleep(LOOK_EVERY_MS);
    }
    return {
      build: buildId,
      workersStartedInMs: builds.startedInMs(buildId),
      confirmedAtMs: since(),
      waitedMs: Date.now() - due,
    };
  };

  // Counted just before a switch, so the runs are those the switch meets (again while Temporal restarts).
  const placeOldRunsSurely = async (buildId: string | null): Promise<OldRunsAtSwitch> => {
    for (;;) {
      const placed = await placeOldRuns(buildId).catch((error: unknown) => {
        if (pastDeadline()) throw error;
        return null;
      });
      if (placed !== null) return placed;
      await sleep(LOOK_EVERY_MS);
    }
  };

  /**
   * Makes `buildId` current, or (a percentage below 100) the ramping version: that share of new runs starts on
   * it, the rest on the current one. Making the ramping version current ends its ramp.
   */
  const switchTo = async (
    buildId: string,
    from: string | null,
    percentage = 100,
    returnedTo: string | null = null,
  ): Promise<void> => {
    const kind = percentage < 100 ? 'ramping' : 'current';
    const polling = await confirmPolling(buildId);
    const oldRuns = await placeOldRunsSurely(from);
    const returned =
      returnedTo === null ? null : { build: returnedTo, runs: await placeOldRunsSurely(returnedTo) };
    say(
      `upgrade: before ${version(buildId)} ${kind === 'ramping' ? `ramps at ${percentage}%` : 'is current'} ` +
        `(polling, its workers started in ${seconds(polling.workersStartedInMs)}), open runs of ` +
        `${from ?? 'unversioned'}: ${placesOf(oldRuns)}` +
        (returned === null ? '' : `; of ${returned.build}: ${placesOf(returned.runs)}`),
    );
    for (;;) {
      try {
        if (kind === 'ramping') {
          await client.workflowService.setWorkerDeploymentRampingVersion({
            namespace,
            deploymentName: settings.deploymentName,
            buildId,
            percentage,
            identity: 'order-mail-chaos-upgrade',
          });
        } else {
          await client.workflowService.setWorkerDeploymentCurrentVersion({
            namespace,
            deploymentName: settings.deploymentName,
            buildId,
            identity: 'order-mail-chaos-upgrade',
          });
        }
        break;
      } catch (error) {
        // Refused while Temporal restarts: tried again until the run's timeout.
        if (pastDeadline()) throw error;
        await sleep(LOOK_EVERY_MS);
      }
    }
    const switchedAtMs = since();
    const fleet = builds.fleet(buildId);
    if (!killable.includes(fleet)) killable.push(fleet);
    const shot = await snapshot(version(buildId), from ?? 'unversioned', oldRuns, polling, switchedAtMs);
    switches.push({ ...shot, kind, percentage, returnedTo: returned });
    say(
      `upgrade: ${version(buildId)} is ${kind === 'ramping' ? `ramping at ${percentage}%` : 'current'} at ` +
        `${seconds(shot.atMs)}; ${describeOpen(shot)}`,
    );
  };

  // 2.0's runs drain as long as one closes or moves to N now and then; only a stall fails the rollout.
  const waitForUnversionedDrain = async (): Promise<void> => {
    let fewest = Number.POSITIVE_INFINITY;
    let fellAt = Date.now();
    for (;;) {
      const open = await count(`${openRuns} AND ${ofBuild(null)}`).catch(() => null);
      if (open === 0) {
        unversionedDrainedAtMs = since();
        return;
      }
      if (open !== null && open < fewest) {
        fewest = open;
        fellAt = Date.now();
      }
      if (Date.now() - fellAt > drainStallBoundMs())
        throw new Error(
          `2.0's unversioned runs stopped draining: ${fewest} open, none closed or moved to N for ` +
            `${seconds(drainStallBoundMs())}`,
        );
      if (pastDeadline()) throw new Error(`2.0's unversioned runs had not drained by the run's timeout`);
      await sleep(LOOK_EVERY_MS);
    }
  };

  const kills = setInterval(
    () => {
      const alive = killable.filter((fleet) => fleet.aliveCount() > 0);
      if (stopped || alive.length === 0) return;
      void alive[Math.floor(options.random() * alive.length)]!.killOneAndReplace(
        WORKER_RESTART_DELAY_MS,
      ).catch(() => undefined);
    },
    Math.max(options.killEveryMs, 1_000),
  );
  if (options.killEveryMs <= 0) clearInterval(kills);

  const done = (async () => {
    try {
      await sleep(settings.atMs - since());
      await switchTo(BUILDS.n, null);
      await waitForUnversionedDrain();
      // One period on N at least, however soon 2.0's runs drained; then one period of ramp, one of N+1.
      await sleep(switches.at(-1)!.atMs + settings.everyMs - since());
      await switchTo(BUILDS.next, BUILDS.n, settings.rampPercentage);
      await sleep(switches.at(-1)!.atMs + settings.everyMs - since());
      await switchTo(BUILDS.next, BUILDS.n);
      await sleep(switches.at(-1)!.atMs + settings.everyMs - since());
      say(`upgrade: rolling back to ${version(BUILDS.n)}`);
      await switchTo(BUILDS.n, BUILDS.next, 100, BUILDS.n);
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
      const killsByBuild: Record<string, number> = {};
      for (const buildId of [BUILDS.n, BUILDS.next])
        killsByBuild[buildId] = builds.fleet(buildId).counts().kills;
      return {
        deploymentName: settings.deploymentName,
        shapedLoad: settings.shapedLoad,
        drainStallBoundMs: drainStallBoundMs(),
        minPerState: settings.minPerState,
        switches,
        unversionedDrainedAtMs,
        runsByBuild,
        killsByBuild,
        nondeterminismFailures: [...new Set(nondeterminism)],
        crossedBuilds: crossed,
        movedFromUnversioned,
        historiesUnreadable: unreadable,
        failure,
      };
    },
    stop() {
      // A switch still waiting gives up at its next look; the facts were read before.
      stopped = true;
      clearInterval(kills);
      return Promise.resolve();
    },
  };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function placesOf(runs: OldRunsAtSwitch): string {
  return (
    `${runs.claimed} claimed, ${runs.midSend} mid-send, ${runs.settleDelay} in a settle delay, ` +
    `${runs.notSentBackoff} in a not-sent backoff, ${runs.other} other (counted in ${seconds(runs.countedInMs)})`
  );
}

function describeOpen(shot: Pick<UpgradeSwitch, 'openByBuild'>): string {
  return Object.entries(shot.openByBuild)
    .map(
      ([build, states]) => `${build}: ${STATES.map((state) => `${states[state] ?? 0} ${state}`).join(', ')}`,
    )
    .join('; ');
}
