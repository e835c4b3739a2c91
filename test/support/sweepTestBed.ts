// What the sweep's test files share: a database, the sandbox, a client and a worker that runs the sweep, the
// sweep's Schedule (paused: only a test's trigger runs it), and the orders, quiet rows and stalled sends they
// seed. One bed per file, opened before its first test and closed after its last.
import { randomUUID } from 'node:crypto';
import type { ScheduleHandle } from '@temporalio/client';
import { afterAll, beforeAll } from 'vitest';
import { createActivities, type ActivityDependencies } from '../../src/activities';
import type { SweepSettings } from '../../src/activities/sweepActivities';
import type { OrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import { ensureSweepSchedule } from '../../src/temporal/sweepSchedule';
import type { reconcileOrderMails, SweepReport } from '../../src/workflows/reconcileOrderMails';
import {
  closeInReverse,
  createOrder,
  openTestServices,
  startTestWorker,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestServices,
} from './testKit';

export const SWEEP_GRACE_MS = 10 * 60_000;

/** The sweep's settings in these tests: a 10-minute grace, a day's look-back, `batchSize` orders a batch. */
export function sweepSettings(batchSize: number): SweepSettings {
  return { graceMs: SWEEP_GRACE_MS, lookbackMs: 24 * 3_600_000, confirmedSince: null, batchSize };
}

export interface SweepTestBed extends Readonly<TestServices> {
  /** Runs the mail workflow and the sweep. */
  readonly worker: RunningTestWorker;
  /** Triggers the schedule and waits for the sweep it started (and its continued-as-new runs) to finish. */
  triggerSweep: () => Promise<{ report: SweepReport; workflowId: string; firstRunId: string }>;
  /** Moves the order's confirmation `agoMs` into the past. */
  confirmedAgo: (orderId: string, agoMs: number) => Promise<void>;
  /** A new order confirmed `agoMs` ago (createOrder confirms it now), optionally in another status. */
  orderConfirmedAgo: (agoMs: number, status?: 'confirmed' | 'pending' | 'cancelled') => Promise<string>;
  /** The order's row quiet for `quietForMs` (an hour: longer than the grace; the sweep leaves fresh claims alone). */
  makeQuiet: (orderId: string, quietForMs?: number) => Promise<void>;
  /** A worker whose send holds its claim before the dispatch fence until released, then gives up: no request. */
  startStalledSendWorker: (options: {
    identity: string;
    temporal?: { address: string; namespace: string };
  }) => Promise<StalledSendWorker>;
}

export interface StalledSendWorker extends RunningTestWorker {
  /** Its dependencies, for a worker that polls its queue later without the stall. */
  dependencies: ActivityDependencies;
  /** Waits until a run's send is held. */
  underWay: (what: string) => Promise<void>;
  /** Lets the held send give up and waits for it; nothing when no send started. */
  release: () => Promise<void>;
}

interface Parts extends TestServices {
  worker: RunningTestWorker;
}

/** Registers the file's beforeAll and afterAll; the bed's parts are there from the first test on. */
export function useSweepTestBed(
  prefix: string,
  options: { settings: SweepSettings; metrics?: OrderMailMetrics },
): SweepTestBed {
  const parts: Partial<Parts> = {};
  const part = <K extends keyof Parts>(key: K): Parts[K] => {
    const value = parts[key];
    if (value === undefined) throw new Error(`the sweep test bed has no ${key}: it opens in beforeAll`);
    return value;
  };
  // Closed in reverse order, also when a later part failed to start, so nothing is left running.
  const closers: (() => Promise<void>)[] = [];
  let schedule: Promise<ScheduleHandle> | undefined;

  beforeAll(async () => {
    const { database, mail, client } = Object.assign(parts, await openTestServices(prefix, closers));
    const { settings, metrics } = options;
    const worker = await startTestWorker(
      { db: database.db, mail, settings: testSettings() },
      {
        reconcile: {
          db: database.db,
          temporal: client,
          settings,
          ...(metrics === undefined ? {} : { metrics }),
        },
      },
    );
    closers.push(() => worker.stop());
    parts.worker = worker;
  });

  afterAll(() => closeInReverse(closers));

  // Made at the first trigger: a file that starts its sweeps directly has none.
  const sweepSchedule = (): Promise<ScheduleHandle> =>
    (schedule ??= (async () => {
      const client = part('client');
      const scheduleId = `${prefix}-${randomUUID()}`;
      await ensureSweepSchedule(client, {
        scheduleId,
        taskQueue: part('worker').taskQueue,
        intervalMs: 300_000,
        paused: true,
      });
      const handle = client.schedule.getHandle(scheduleId);
      closers.push(() => handle.delete());
      return handle;
    })());

  const confirmedAgo = async (orderId: string, agoMs: number): Promise<void> => {
    await part('database').db.query(
      `UPDATE orders SET confirmed_at = now() - make_interval(secs => $2::double precision / 1000) WHERE id = $1`,
      [orderId, agoMs],
    );
  };

  return {
    get database() {
      return part('database');
    },
    get sandbox() {
      return part('sandbox');
    },
    get mail() {
      return part('mail');
    },
    get client() {
      return part('client');
    },
    get worker() {
      return part('worker');
    },

    async triggerSweep() {
      const handle = await sweepSchedule();
      const before = (await handle.describe()).info.numActionsTaken;
      await handle.trigger();
      const action = await waitFor('the schedule to start a sweep', async () => {
        const { info } = await handle.describe();
        return info.numActionsTaken > before ? info.recentActions.at(-1)?.action : undefined;
      });
      const { workflowId, firstExecutionRunId } = action.workflow;
      const report = await part('client').workflow.getHandle<typeof reconcileOrderMails>(workflowId).result();
      return { report, workflowId, firstRunId: firstExecutionRunId };
    },

    confirmedAgo,

    async orderConfirmedAgo(agoMs, status = 'confirmed') {
      const orderId = await createOrder(part('database').db, { status });
      await confirmedAgo(orderId, agoMs);
      return orderId;
    },

    async makeQuiet(orderId, quietForMs = 3_600_000) {
      await part('database').db.query(
        `UPDATE order_mail_log SET updated_at = now() - make_interval(secs => $2::double precision / 1000)
          WHERE order_id = $1`,
        [orderId, quietForMs],
      );
    },

    async startStalledSendWorker({ identity, temporal }) {
      const dependencies: ActivityDependencies = {
        db: part('database').db,
        mail: part('mail'),
        settings: testSettings(),
        workerIdentity: identity,
        mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      };
      let releaseSend!: () => void;
      const sendReleased = new Promise<void>((resolve) => (releaseSend = resolve));
      let stalledSend: Promise<unknown> | null = null;
      const release = async (): Promise<void> => {
        releaseSend();
        await stalledSend?.catch(() => undefined);
      };
      const running = await startTestWorker(dependencies, {
        ...(temporal === undefined ? {} : { temporal }),
        activities: {
          ...createActivities(dependencies),
          sendOrderMail: () =>
            (stalledSend = sendReleased.then(() => {
              throw new Error('test: the stalled send gave up');
            })),
        },
      });
      return {
        taskQueue: running.taskQueue,
        dependencies,
        async underWay(what) {
          await waitFor(what, async () => (stalledSend === null ? undefined : true));
        },
        release,
        async stop() {
          // A held send would keep the worker's shutdown waiting.
          await release();
          await running.stop();
        },
      };
    },
  };
}
