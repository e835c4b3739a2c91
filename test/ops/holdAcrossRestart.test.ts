// A hold across a worker SIGKILL and a Temporal server restart (docs/operating.md "Holding every send"): runs
// held by `npm run ops -- hold` wait on the resume signal and their fallback timer while the worker process is
// killed, another starts, and the Temporal server restarts on its own database file. No request reaches the
// provider until resume, the runs stay open and spend no attempt (SEND_MAX_ATTEMPTS is 1), the timer still
// fires after the restart and the claim it brings is refused again, and resume gives each order one mail.
// The file runs a dev server of its own: the shared one serves other files at the same time.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal as proto } from '@temporalio/proto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { main } from '../../src/cli/ops';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startTemporalDevServer, type TemporalDevServer } from '../../dev/devtools/devServer';
import { devServerSearchAttributes } from '../../dev/devtools/searchAttributeFlags';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  allStarted,
  createOperatorLogin,
  createOrder,
  openTestDatabase,
  waitFor,
  type OutsideLogin,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const NAMESPACE = 'default';
const ORDERS = 4;
// The hold wait's first fallback timer, asked at the start (a minute in production): the test waits for it to
// fire once after the restart, so the held runs are seen claiming again, and being refused again, on the
// restarted server. Long enough to outlast the kill, a worker's start and the restart with room to spare.
const FIRST_RECHECK_MS = 30_000;
const EventType = proto.api.enums.v1.EventType;

let directory: string;
let temporal: TemporalDevServer;
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let operator: OutsideLogin;
const taskQueue = `hold-across-restart-${randomUUID()}`;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'hold-restart-'));
  // Side by side: the server, the database and the sandbox need nothing of each other (issue 38).
  await allStarted([
    (async () => {
      // Its state in a file, so a restart keeps every run, timer and search attribute.
      temporal = await startTemporalDevServer({
        uiPort: null,
        namespace: NAMESPACE,
        searchAttributes: devServerSearchAttributes(),
        dbFilename: path.join(directory, 'temporal.db'),
      });
      const connection = await Connection.connect({ address: temporal.address });
      client = new Client({ connection, namespace: NAMESPACE });
    })(),
    (async () => {
      database = await openTestDatabase('hold_restart');
      operator = await createOperatorLogin(database.db, database.connectionString, 'restartholder');
    })(),
    (async () => {
      sandbox = await startMailSandbox();
    })(),
  ]);
}, 120_000);

afterAll(async () => {
  for (const worker of workers) {
    worker.kill('SIGKILL');
    await worker.exited;
  }
  await client?.connection.close();
  await temporal?.stop();
  await sandbox?.close();
  await database?.close();
  await operator?.drop();
  if (directory !== undefined) await rm(directory, { recursive: true, force: true });
});

/** A worker as `npm start` runs it, a process of its own, so it can be SIGKILLed. */
async function startWorkerProcess(): Promise<WorkerProcess> {
  const worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: NAMESPACE,
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_DEPLOYMENT_ID: 'hold-restart',
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    // A refused claim counted as an attempt would end the run as given up at once.
    SEND_MAX_ATTEMPTS: '1',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  workers.push(worker);
  await worker.started;
  return worker;
}

async function ops(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    argv,
    {
      OPS_DATABASE_URL: operator.connectionString,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      TEMPORAL_TASK_QUEUE: taskQueue,
    },
    { out: (text) => out.push(text), err: (text) => err.push(text) },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Stops the server and starts it again on the same port and database file. */
async function restartTemporal(): Promise<void> {
  // Only the SDK's downloaded server lacks it, used when no temporal CLI is installed (scripts/setup.sh installs one).
  if (temporal.restart === undefined)
    throw new Error('this dev server cannot restart: install the temporal CLI');
  await temporal.restart();
}

/** Send requests the sandbox received (lookups are counted apart). */
function sendRequests(): number {
  return sandbox.requests().filter((request) => request.method === 'POST' && request.provider !== null)
    .length;
}

/** Open, showing it waits out a hold, and waiting on a timer or a signal: no activity scheduled. */
async function waitingOutTheHold(orderId: string): Promise<boolean> {
  const described = await client.workflow.getHandle(orderId).describe();
  return (
    described.status.name === 'RUNNING' &&
    described.typedSearchAttributes.get(OrderMailState) === 'held' &&
    (described.raw.pendingActivities ?? []).length === 0
  );
}

/** The run's timers in its history: how long each was, when it started, and how it ended. */
async function holdTimers(orderId: string) {
  const events = (await client.workflow.getHandle(orderId).fetchHistory()).events ?? [];
  const at = ({ eventTime }: (typeof events)[number]) =>
    Number(eventTime?.seconds ?? 0) * 1_000 + (eventTime?.nanos ?? 0) / 1e6;
  return events.flatMap((event) => {
    const started = event.timerStartedEventAttributes;
    if (event.eventType !== EventType.EVENT_TYPE_TIMER_STARTED || !started) return [];
    const timeout = started.startToFireTimeout;
    const end = events.find(
      (each) =>
        (each.timerFiredEventAttributes ?? each.timerCanceledEventAttributes)?.timerId === started.timerId,
    );
    return [
      {
        ms: Number(timeout?.seconds ?? 0) * 1_000 + Math.round((timeout?.nanos ?? 0) / 1e6),
        startedAt: at(event),
        firedAt: end?.timerFiredEventAttributes ? at(end) : null,
        ended: end?.timerFiredEventAttributes
          ? 'fired'
          : end?.timerCanceledEventAttributes
            ? 'cancelled'
            : null,
      },
    ];
  });
}

/** Every attempt on record was refused at the fence: no request, no unknown, nothing settled by the policy. */
async function onlyRefusedAttempts(orderId: string): Promise<number> {
  const attempts = await listAttempts(database.db, orderId);
  for (const attempt of attempts) {
    expect(attempt).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      dispatchedAt: null,
      unknownPolicy: null,
    });
  }
  return attempts.length;
}

it(
  'a hold across a worker SIGKILL and a Temporal restart: nothing sent while held, no attempt spent, then one mail each',
  async () => {
    // The hold is the database's, the worker a process polling Temporal: neither waits for the other.
    const [first, held] = await Promise.all([
      startWorkerProcess(),
      ops('hold', '--reason', 'across a kill and a Temporal restart'),
    ]);
    expect(held).toMatchObject({ code: 0, err: '' });
    const requestsAtHold = sendRequests();

    const orderIds: string[] = [];
    for (let index = 0; index < ORDERS; index++) {
      const orderId = await createOrder(database.db);
      await client.workflow.start(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue,
        args: [orderId, { firstHoldRecheckMs: FIRST_RECHECK_MS }],
      });
      orderIds.push(orderId);
    }
    for (const orderId of orderIds) {
      await waitFor(`order ${orderId} held`, async () =>
        (await waitingOutTheHold(orderId)) ? true : undefined,
      );
      expect(await onlyRefusedAttempts(orderId)).toBe(1);
    }

    // The worker dies without a word, another takes the task queue, then the server restarts on its file.
    const killedAt = Date.now();
    first.kill('SIGKILL');
    await first.exited;
    await startWorkerProcess();
    await restartTemporal();
    const restartedAt = Date.now();
    expect(sendRequests()).toBe(requestsAtHold);
    for (const orderId of orderIds) {
      expect(await waitingOutTheHold(orderId)).toBe(true);
      // Its timer has not fired yet: the wait it is in began before the kill and outlives the restart.
      expect(await readMailLog(database.db, orderId)).toMatchObject({ attempts: 1, state: 'failed' });
    }

    // The fallback timer, kept by the restarted server, fires; the claim it brings is refused again, and the
    // run goes back to waiting: still no attempt of its own spent, still nothing sent.
    for (const orderId of orderIds) {
      await waitFor(
        `order ${orderId} to claim again at its timer and be refused`,
        async () => {
          // The row as the refusal left it, not the claim before it (then the run still shows 'held' too).
          const row = await readMailLog(database.db, orderId);
          if (row?.attempts !== 2 || row.state !== 'failed') return undefined;
          return (await waitingOutTheHold(orderId)) ? true : undefined;
        },
        FIRST_RECHECK_MS + 30_000,
      );
      expect(await onlyRefusedAttempts(orderId)).toBe(2);
    }
    expect(sendRequests()).toBe(requestsAtHold);

    const resumed = await ops('resume', '--reason', 'restarts done', '--rate', '50');
    expect(resumed).toMatchObject({ code: 0, err: '' });
    // Signalled, they claim again at once, not at their next timer (the history below shows it cancelled).
    await waitFor(
      'every held order sent after resume',
      async () => {
        const rows = await Promise.all(orderIds.map((orderId) => readMailLog(database.db, orderId)));
        return rows.every((row) => row?.state === 'sent') ? true : undefined;
      },
      60_000,
    );
    for (const orderId of orderIds) {
      const handle = client.workflow.getHandle(orderId);
      expect(await handle.result()).toMatchObject({ result: 'sent', outcome: 'accepted' });
      expect((await handle.describe()).status.name).toBe('COMPLETED');
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        unknownPolicy: null,
      });
      // The two refused claims, then the one that sent: none left unknown or settled by the policy.
      const attempts = await listAttempts(database.db, orderId);
      expect(attempts.map((attempt) => [attempt.attempt, attempt.outcome, attempt.unknownPolicy])).toEqual([
        [1, 'not_sent', null],
        [2, 'not_sent', null],
        [3, 'accepted', null],
      ]);
      expect(attempts.filter((attempt) => attempt.dispatchedAt !== null)).toHaveLength(1);
      // The first timer started before the kill and fired on the restarted server; the second, twice as long,
      // was cut short by the resume signal.
      const timers = await holdTimers(orderId);
      expect(timers.map((timer) => timer.ms)).toEqual([FIRST_RECHECK_MS, 2 * FIRST_RECHECK_MS]);
      expect(timers[0]?.startedAt).toBeLessThan(killedAt);
      expect(timers[0]?.firedAt).toBeGreaterThan(restartedAt);
      expect(timers.map((timer) => timer.ended)).toEqual(['fired', 'cancelled']);
    }
    expect(sendRequests()).toBe(requestsAtHold + ORDERS);
  },
  // The fallback timer alone is a minute, on top of two worker starts and a server restart.
  FIRST_RECHECK_MS + 120_000,
);
