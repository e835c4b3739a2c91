// Runs every path that has a stored history (histories.ts, RECORDED_PATHS) against the current workflow code
// and real parts, and compares what the workflow issued and got with the stored history, so a fixture that no
// longer matches today's code fails here instead of passing the replay test. With UPDATE_REPLAY_HISTORIES=1
// (`npm run test:record-histories`) it stores the fresh histories instead.
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities, type ActivityDependencies } from '../../src/activities';
import { createSweepActivities, type SweepDependencies } from '../../src/activities/sweepActivities';
import { readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { OrderMailWorkflowSettings } from '../../src/shared/workflowSettings';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { ORDER_MAIL_ATTRIBUTES_AT_START, SEND_HOLD_RESUME_SIGNAL } from '../../src/shared/workflowContract';
import { orderMailWorkerOptions } from '../../src/workerOptions';
import { ActivityHolds } from '../support/heldActivities';
import { bundleWithInterceptor } from '../support/interceptedBundle';
import { testVerifier } from '../support/verificationKit';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testProviderMailClient,
  testSettings,
  waitFor,
  WORKFLOWS_ON_MAIN_THREAD,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import {
  fetchHistoryJson,
  pathShape,
  readStoredHistory,
  RECORDED_PATHS,
  storeHistory,
  type RecordedPath,
} from './histories';

const EventType = temporal.api.enums.v1.EventType;
const UPDATE = process.env.UPDATE_REPLAY_HISTORIES === '1';
const MAIL_IDENTITY = { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' };

let database: TestDatabase;
let sandbox: MailSandbox;
/** reset-mid-send-verified-accepted's own: its held request and its release touch no other path's. */
let ownSandbox: MailSandbox;
let client: Client;
const transports: MailTransport[] = [];
const stops: (() => Promise<void>)[] = [];
const holds = new ActivityHolds();
const workers = {} as Record<
  'sent' | 'failed' | 'resend' | 'shortSend' | 'reexecuted' | 'verifying' | 'verifyingOwnSandbox',
  { taskQueue: string }
>;
// The sandbox indexes within 1 s by default; the verifying worker waits 1.5 s before it asks.
const VERIFY = { settleDelayMs: 1_500, lookupTimeoutMs: 800, deadlineMs: 3_000 };

async function worker(
  name: keyof typeof workers,
  settings: Partial<OrderMailWorkflowSettings>,
  mail: MailTransport,
  reconcile?: SweepDependencies,
  extra: Partial<ActivityDependencies> = {},
) {
  const deps: ActivityDependencies = {
    db: database.db,
    mail,
    settings: testSettings(settings),
    workerIdentity: `paths-${name}`,
    mailIdentity: MAIL_IDENTITY,
    ...extra,
  };
  const running: RunningTestWorker = await startTestWorker(deps, {
    activities: {
      ...holds.wrap(createActivities(deps)),
      ...(reconcile ? createSweepActivities(reconcile, deps) : {}),
    },
  });
  stops.push(() => running.stop());
  workers[name] = running;
}

/** A worker whose workflow bundle fails the workflow task right after a named local activity's first run. */
async function reexecutingWorker(mail: MailTransport): Promise<void> {
  const code = await bundleWithInterceptor(
    path.join(__dirname, '../support/failWorkflowTaskAfterFirstExecution.ts'),
  );
  const taskQueue = `paths-reexecuted-${process.pid}-${Date.now()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const created = await Worker.create({
    ...orderMailWorkerOptions({
      connection,
      namespace: inject('temporalNamespace'),
      taskQueue,
      dependencies: {
        db: database.db,
        mail,
        settings: testSettings(),
        workerIdentity: 'paths-reexecuted',
        mailIdentity: MAIL_IDENTITY,
      },
      workflows: { workflowBundle: { code } },
      shutdownGraceTimeMs: 1_000,
      maxConcurrentActivityTaskExecutions: 20,
    }),
    ...WORKFLOWS_ON_MAIN_THREAD,
  });
  const running = created.run();
  stops.push(async () => {
    created.shutdown();
    await running;
    await connection.close();
  });
  workers.reexecuted = { taskQueue };
}

beforeAll(async () => {
  database = await openTestDatabase('recorded_paths');
  sandbox = await startMailSandbox();
  ownSandbox = await startMailSandbox();
  client = await connectTestClient();
  const generic = testMailClient(sandbox.url);
  const resend = testProviderMailClient('resend', sandbox.url);
  const ownGeneric = testMailClient(ownSandbox.url);
  transports.push(generic, resend, ownGeneric);
  const verifier = testVerifier('generic', sandbox.url, { settings: VERIFY });
  stops.push(() => verifier.close());
  const ownVerifier = testVerifier('generic', ownSandbox.url, { settings: VERIFY });
  stops.push(() => ownVerifier.close());
  const sweep = (): SweepDependencies => ({
    db: database.db,
    temporal: client,
    settings: { graceMs: 60_000, lookbackMs: 24 * 3_600_000, confirmedSince: null, batchSize: 10 },
  });
  // Side by side: the re-executing worker's bundle is CPU work, the others' start-ups mostly wait on Temporal.
  await Promise.all([
    reexecutingWorker(generic),
    worker('sent', {}, generic, sweep()),
    worker('failed', { unknownOutcomePolicy: 'assume-failed' }, generic),
    worker(
      'resend',
      { idempotency: { windowMs: 24 * 3_600_000, safetyMarginMs: 3_600_000 }, maxSendAttempts: 10 },
      resend,
    ),
    // A send that stalls longer than its timeout times out before its fence (the test transport's 3 s
    // deadline and the 1 s margin leave it 2 s before the fence).
    worker('shortSend', { sendTimeoutMs: 6_000 }, generic),
    worker('verifying', { verification: VERIFY }, generic, sweep(), { verifier: verifier.verifier }),
    worker('verifyingOwnSandbox', { verification: VERIFY }, ownGeneric, undefined, {
      verifier: ownVerifier.verifier,
    }),
  ]);
}, 120_000);

afterAll(async () => {
  holds.releaseAll();
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  for (const transport of transports) await transport.close();
  await sandbox?.close();
  await ownSandbox?.close();
  await database?.close();
});

function start(
  orderId: string,
  on: keyof typeof workers,
  memo?: Record<string, unknown>,
  workflowTaskTimeoutMs?: number,
) {
  return client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers[on].taskQueue,
    args: [orderId],
    // As src/client.ts starts every order: the first state comes with the start.
    typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
    ...(memo ? { memo } : {}),
    ...(workflowTaskTimeoutMs === undefined ? {} : { workflowTaskTimeout: workflowTaskTimeoutMs }),
  });
}

/**
 * For a cancel while a claim or record (local activities) is held: the workflow task that takes the cancel in
 * completes only by the worker's heartbeat at 80% of the task timeout, 8 s at the default 10 s, twice per path.
 * Not part of the path's shape (workflow-task bookkeeping).
 */
const HELD_LOCAL_ACTIVITY_TASK_TIMEOUT_MS = 3_000;

/** Runs the order's workflow to its end, whatever the end. */
async function settled(orderId: string): Promise<string> {
  await client.workflow
    .getHandle(orderId)
    .result()
    .catch(() => undefined);
  return orderId;
}

async function reset(orderId: string): Promise<void> {
  const { runId } = await client.workflow.getHandle(orderId).describe();
  await resetToFirstWorkflowTask(client, {
    workflowId: orderId,
    runId,
    reason: 'recorded path',
    identity: 'paths',
  });
}

type HistoryEventType = temporal.api.enums.v1.EventType;

async function historyHas(
  orderId: string,
  eventType: HistoryEventType,
  after?: HistoryEventType,
): Promise<boolean> {
  const events = (await client.workflow.getHandle(orderId).fetchHistory()).events ?? [];
  const from = after === undefined ? 0 : events.findIndex((event) => event.eventType === after);
  return from >= 0 && events.slice(from).some((event) => event.eventType === eventType);
}

async function cancelSeen(orderId: string): Promise<void> {
  await waitFor('the cancel request to be handled by a workflow task', async () =>
    (await historyHas(
      orderId,
      EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    ))
      ? true
      : undefined,
  );
}

const PATHS: Record<RecordedPath, () => Promise<string>> = {
  async accepted() {
    const orderId = await createOrder(database.db);
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'rejected-422'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 422 });
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'refused-before-sending'() {
    // Not one plain address: the send refuses it before the fence, and nothing is retried.
    const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'retry-after-429'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429, retryAfterSeconds: 2 });
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'not-sent-gave-up'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429 }, 5);
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'unknown-assume-sent'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await start(orderId, 'sent');
    return settled(orderId);
  },
  async 'unknown-assume-failed-then-accepted'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await start(orderId, 'failed');
    return settled(orderId);
  },
  async 'unknown-idempotent-retry-then-accepted'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await start(orderId, 'resend');
    return settled(orderId);
  },
  async 'unknown-never-dispatched'() {
    // The send stalls before its fence past its timeout: unknown, but the row proves no request was made.
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'send');
    await start(orderId, 'shortSend');
    await settled(orderId);
    hold.release();
    await hold.done;
    return orderId;
  },
  async 'unknown-verified-accepted'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await start(orderId, 'verifying');
    return settled(orderId);
  },
  async 'unknown-verified-not-sent-then-accepted'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    await start(orderId, 'verifying');
    // "Not found" counts only once the lookup shows a later send that got its 2xx and left after this one's
    // request had ended (its dispatch plus its 8 s send timeout: the freshness witness): another order, sent
    // through the same provider. So that the first ask (a settle delay after the drop) already has it, as the
    // stored history does, this attempt's dispatch is set back past its send timeout on Postgres's clock.
    await waitFor('the dropped request to reach the provider', async () =>
      sandbox.requests().some((request) => request.orderId === orderId) &&
      (await readMailLog(database.db, orderId))?.dispatchedAt
        ? true
        : undefined,
    );
    await database.db.query(
      `UPDATE order_mail_log
          SET dispatched_at = dispatched_at - make_interval(secs => (dispatch_send_timeout_ms + 1000) / 1000.0)
        WHERE order_id = $1 AND dispatched_at IS NOT NULL`,
      [orderId],
    );
    const witness = await createOrder(database.db);
    await start(witness, 'verifying');
    await settled(witness);
    return settled(orderId);
  },
  async 'unknown-verification-inconclusive-assume-sent'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    sandbox.queueLookupFault(orderId, { kind: 'status', status: 503 }, 50);
    await start(orderId, 'verifying');
    return settled(orderId);
  },
  async 'reset-of-sent'() {
    const orderId = await createOrder(database.db);
    await start(orderId, 'sent');
    await settled(orderId);
    await reset(orderId);
    return settled(orderId);
  },
  async 'reset-after-rejected-then-accepted'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 422 });
    await start(orderId, 'sent');
    await settled(orderId);
    await reset(orderId);
    return settled(orderId);
  },
  async 'reset-mid-send-verified-accepted'() {
    // On a sandbox of its own: its wait runs beside the paths that hold or release the shared one's sends.
    const orderId = await createOrder(database.db);
    ownSandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    await start(orderId, 'verifyingOwnSandbox');
    await waitFor('the held send to be dispatched', async () =>
      (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
    );
    // Reset once the send timeout and the settle delay since the dispatch have passed (as an operator's reset,
    // minutes later, would):
    // the new run asks at once, with no timer whose length would differ from one recording to the next.
    await new Promise((resolve) =>
      setTimeout(resolve, testSettings().sendTimeoutMs + VERIFY.settleDelayMs + 500),
    );
    await reset(orderId);
    await settled(orderId);
    ownSandbox.releaseHeld();
    return orderId;
  },
  async 'cancel-during-claim'() {
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'claim');
    const handle = await start(orderId, 'sent', undefined, HELD_LOCAL_ACTIVITY_TASK_TIMEOUT_MS);
    await waitFor('the claim to be under way', async () => (hold.entered ? true : undefined));
    await handle.cancel();
    await cancelSeen(orderId);
    hold.release();
    return settled(orderId);
  },
  async 'cancel-during-send'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    const handle = await start(orderId, 'sent');
    await waitFor('the held send to be dispatched', async () =>
      (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
    );
    await handle.cancel();
    await cancelSeen(orderId);
    sandbox.releaseHeld();
    return settled(orderId);
  },
  async 'cancel-during-send-then-settle-delay'() {
    // The cancel comes while the send is under way; the send then ends unknown, and the run, already asked to
    // cancel, still starts its settle-delay timer as 1.0.x runs did (the condition sees the cancel at once).
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const hold = holds.holdAt(orderId, 'send');
    const handle = await start(orderId, 'verifying');
    await waitFor('the send to be under way', async () => (hold.entered ? true : undefined));
    await handle.cancel();
    await cancelSeen(orderId);
    hold.release();
    return settled(orderId);
  },
  async 'cancel-during-backoff'() {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429, retryAfterSeconds: 600 });
    const handle = await start(orderId, 'sent');
    await waitFor('the backoff timer to start', async () =>
      (await historyHas(orderId, EventType.EVENT_TYPE_TIMER_STARTED)) ? true : undefined,
    );
    await handle.cancel();
    return settled(orderId);
  },
  async 'cancel-during-record'() {
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'record');
    const handle = await start(orderId, 'sent', undefined, HELD_LOCAL_ACTIVITY_TASK_TIMEOUT_MS);
    await waitFor('the record to be under way', async () => (hold.entered ? true : undefined));
    await handle.cancel();
    await cancelSeen(orderId);
    hold.release();
    return settled(orderId);
  },
  async 'claim-reexecuted'() {
    const orderId = await createOrder(database.db);
    await start(orderId, 'reexecuted', { failWorkflowTaskAfterFirst: 'claimOrderMail' });
    return settled(orderId);
  },
  async 'record-reexecuted'() {
    const orderId = await createOrder(database.db);
    await start(orderId, 'reexecuted', { failWorkflowTaskAfterFirst: 'recordOrderMailOutcome' });
    return settled(orderId);
  },
  async 'sweep-settles-terminated-run'() {
    // A run terminated while its send stalls before the fence; the sweep releases its claim.
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'send');
    const handle = await start(orderId, 'sent');
    await waitFor('the send to be under way', async () => (hold.entered ? true : undefined));
    await handle.terminate('recorded path: terminated mid-attempt');
    await database.db.query(
      `UPDATE order_mail_log SET updated_at = now() - interval '1 hour' WHERE order_id = $1`,
      [orderId],
    );
    const sweepId = `sweep-${orderId}`;
    const report = await client.workflow.execute(reconcileOrderMails, {
      workflowId: sweepId,
      taskQueue: workers.sent.taskQueue,
      args: [{}],
    });
    expect(report.stuck).toEqual([expect.objectContaining({ orderId, settlement: 'released' })]);
    // The terminated run's send, still executing, now meets a settled row at its fence: no request.
    hold.release();
    await hold.done;
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
    return sweepId;
  },
  async 'sweep-verifies-terminated-run'() {
    // A run terminated after its request reached the provider; the sweep looks it up before the policy.
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    const handle = await start(orderId, 'verifying');
    await waitFor('the held send to be dispatched', async () =>
      (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
    );
    await handle.terminate('recorded path: terminated mid-send');
    await database.db.query(
      `UPDATE order_mail_log SET updated_at = now() - interval '1 hour' WHERE order_id = $1`,
      [orderId],
    );
    // The sweep asks only about a request older than the send timeout and the settle delay.
    await new Promise((resolve) =>
      setTimeout(resolve, testSettings().sendTimeoutMs + VERIFY.settleDelayMs + 500),
    );
    const sweepId = `sweep-${orderId}`;
    const report = await client.workflow.execute(reconcileOrderMails, {
      workflowId: sweepId,
      taskQueue: workers.verifying.taskQueue,
      args: [{}],
    });
    sandbox.releaseHeld();
    expect(report.stuck).toEqual([
      expect.objectContaining({ orderId, settlement: 'settled', settledAs: 'verified-accepted' }),
    ]);
    return sweepId;
  },
  async 'order-visible-after-wait'() {
    const orderId = String(BigInt(await createOrder(database.db)) + 1_000n);
    await start(orderId, 'sent');
    // Inserted during the second wait (1 s), so the path is: two claims that find nothing, two timers, a send.
    await waitFor('the second wait for the order', async () => {
      const events = (await client.workflow.getHandle(orderId).fetchHistory()).events ?? [];
      const timers = events.filter((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED);
      return timers.length >= 2 ? true : undefined;
    });
    await database.db.transaction(async (db) => {
      await db.query(
        `INSERT INTO orders (id, customer_name, customer_email, status, confirmed_at)
         VALUES ($1, '山田 太郎', 'late@example.com', 'confirmed', now())`,
        [orderId],
      );
      await db.query(
        `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
         VALUES ($1, 1, '有機緑茶 100g', 1, 1200)`,
        [orderId],
      );
    });
    return settled(orderId);
  },
  async 'order-never-visible'() {
    const orderId = String(BigInt(await createOrder(database.db)) + 2_000n);
    await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: workers.sent.taskQueue,
      // A 1 s bound: claims at 0 s and 0.5 s find nothing, the one after the 1 s wait ends the run.
      args: [orderId, { orderVisibleWaitMs: 1_000 }],
      typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
    });
    return settled(orderId);
  },
  async 'held-then-resumed'() {
    const orderId = await createOrder(database.db);
    await database.db.query(
      `INSERT INTO order_mail_send_holds (scope, reason) VALUES ('*', 'recorded path')`,
    );
    try {
      await start(orderId, 'sent');
      await waitFor('the run to wait out the hold', async () => {
        const { typedSearchAttributes } = await client.workflow.getHandle(orderId).describe();
        return typedSearchAttributes.get(OrderMailState) === 'held' ? true : undefined;
      });
    } finally {
      await database.db.query(`DELETE FROM order_mail_send_holds`);
    }
    await client.workflow.getHandle(orderId).signal(SEND_HOLD_RESUME_SIGNAL);
    return settled(orderId);
  },
};

/**
 * Paths that act on what the whole sandbox or database holds, run one after the other (beside the rest): a
 * release answers every held request, not one order's, and a sweep reads every row (two sweeps at once would
 * each see the other's orphan). The sweeps go first, while every other order is younger than their grace.
 * (reset-mid-send-verified-accepted releases held requests too, but on a sandbox of its own: it runs beside.)
 */
const ONE_AT_A_TIME: RecordedPath[] = [
  'sweep-settles-terminated-run',
  'sweep-verifies-terminated-run',
  'cancel-during-send',
];
/** Holds every send ('*'): run alone, once the others are done. */
const ALONE: RecordedPath[] = ['held-then-resumed'];

async function checkPath(name: RecordedPath): Promise<void> {
  const fresh = await fetchHistoryJson(await PATHS[name]());
  if (UPDATE) {
    storeHistory(name, fresh);
    return;
  }
  const stored = readStoredHistory(name);
  expect(stored, `no stored history for ${name}: npm run test:record-histories`).not.toBeNull();
  expect(
    pathShape(fresh),
    `the stored history of ${name} no longer matches what the workflow does: npm run test:record-histories`,
  ).toEqual(pathShape(stored!));
}

describe('every stored history is what today’s workflow does on its path', () => {
  it('covers exactly the recorded paths', () => {
    expect(Object.keys(PATHS).sort()).toEqual([...RECORDED_PATHS].sort());
  });

  // Each path has its own order, and its faults, holds and lookups are keyed by it: they run side by side.
  describe('side by side', { concurrent: true }, () => {
    describe('one at a time', { concurrent: true }, () => {
      for (const name of ONE_AT_A_TIME) it(name, { concurrent: false }, () => checkPath(name));
    });
    for (const name of RECORDED_PATHS) {
      if (ONE_AT_A_TIME.includes(name) || ALONE.includes(name)) continue;
      it(name, () => checkPath(name));
    }
  });

  for (const name of ALONE) it(name, () => checkPath(name));
});
