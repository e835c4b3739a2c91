// Lookups have slots of their own (docs/design.md §6, "Lookup slots"): with every send slot of the worker held by
// slow sends, an unknown's lookup still answers within the verification deadline, and the order gets its one
// mail by the evidence, not by the policy. The workers are built as src/workerPair.ts builds them (the process's
// workers, not the tests' single one); real Postgres, the real Temporal dev server, the sandbox over loopback.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createMailTransport } from '../../src/mail/createMailTransport';
import type { MailTransport } from '../../src/mail/types';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { lookupTaskQueueOf, orderMailWorkerPair } from '../../src/workerOptions';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { pinnedTemporalCli } from '../../dev/devtools/findTemporalCli';
import {
  allStarted,
  connectTestClient,
  createOrder,
  openTestDatabase,
  testSesSettings,
  testSettings,
  TEST_MAILGUN_DOMAIN,
  waitFor,
  WORKFLOWS_ON_MAIN_THREAD,
  type TestDatabase,
} from '../support/testKit';
import { attemptsWithVerification, rowWithVerification, testVerifier } from '../support/verificationKit';

// Two send slots, each held by a send the sandbox answers only after HOLD_MS: longer than the settle delay and
// the deadline together, so a lookup queued behind them starts past its deadline.
const SEND_SLOTS = 2;
const HOLD_MS = 12_000;
// The settle delay leaves the second slow send time to take its slot before the lookup is scheduled.
const VERIFY: VerificationSettings = { settleDelayMs: 3_000, lookupTimeoutMs: 800, deadlineMs: 4_000 };
// The transport waits out the slow sends: 20 s for the answer, and the send timeout 5 s past that (testSettings).
const TRANSPORT_DEADLINE_MS = 20_000;
const SEND_TIMEOUT_MS = TRANSPORT_DEADLINE_MS + 5_000;

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];
const taskQueues = new Map<string, string>();
const deployment = { deploymentName: `lookups-${randomUUID().slice(0, 8)}`, buildId: '1' };

function slowSendTransport(baseUrl: string): MailTransport {
  return createMailTransport({
    provider: 'generic',
    baseUrl,
    apiKey: 'sandbox-key',
    mailgunDomain: TEST_MAILGUN_DOMAIN,
    postmarkMessageStream: 'outbound',
    ses: testSesSettings(),
    connectTimeoutMs: 1_000,
    headersTimeoutMs: TRANSPORT_DEADLINE_MS,
    overallTimeoutMs: TRANSPORT_DEADLINE_MS,
    connections: SEND_SLOTS + 2,
  });
}

/** The process's workers on a queue of their own, with SEND_SLOTS activity slots. */
async function startProcessWorkers(
  name: string,
  policy: UnknownOutcomePolicy,
  versioned: typeof deployment | null = null,
): Promise<void> {
  const taskQueue = `test-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const mail = slowSendTransport(sandbox.url);
  const verifier = testVerifier('generic', sandbox.url, { settings: VERIFY });
  const options = orderMailWorkerPair({
    connection,
    namespace: inject('temporalNamespace'),
    taskQueue,
    dependencies: {
      db: database.db,
      mail,
      verifier: verifier.verifier,
      workerIdentity: `test-worker-${taskQueue.slice(5, 13)}`,
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      settings: testSettings({
        unknownOutcomePolicy: policy,
        sendTimeoutMs: SEND_TIMEOUT_MS,
        verification: VERIFY,
      }),
    },
    workflows: { workflowBundle: { codePath: inject('workflowBundlePath') } },
    shutdownGraceTimeMs: 1_000,
    maxConcurrentActivityTaskExecutions: SEND_SLOTS,
    sendRateLimitPerSecond: null,
    deployment: versioned,
  });
  const workers = await Promise.all([
    Worker.create(options.activityWorker),
    Worker.create({ ...options.workflowWorker, ...WORKFLOWS_ON_MAIN_THREAD }),
    Worker.create(options.lookupWorker),
  ]);
  const running = workers.map((worker) => worker.run());
  stops.push(
    async () => {
      for (const worker of workers) worker.shutdown();
      await Promise.all(running);
      await connection.close();
    },
    () => verifier.close(),
    () => mail.close(),
  );
  taskQueues.set(name, taskQueue);
}

beforeAll(async () => {
  database = await openTestDatabase('lookup_slots');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  client = await connectTestClient();
  // Side by side: each pair has its own connection and queue.
  await allStarted([
    startProcessWorkers('assume-sent', 'assume-sent'),
    startProcessWorkers('assume-failed', 'assume-failed'),
    startProcessWorkers('versioned', 'assume-sent', deployment),
  ]);
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

function startMail(orderId: string, workers: string) {
  return client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: taskQueues.get(workers)!,
    args: [orderId],
  });
}

function sendRequests(orderId: string) {
  return sandbox.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

async function untilRequestSeen(orderId: string, status?: string): Promise<void> {
  await waitFor(`order ${orderId}'s send to reach the sandbox`, async () =>
    sendRequests(orderId).some((request) => status === undefined || request.status === status)
      ? true
      : undefined,
  );
}

/** The task queues the run's lookups were scheduled on, each once. */
async function lookupQueuesOf(run: WorkflowHandle): Promise<(string | null | undefined)[]> {
  const { events } = await run.fetchHistory();
  const queues = (events ?? []).flatMap((event) => {
    const scheduled = event.activityTaskScheduledEventAttributes;
    return scheduled?.activityType?.name === 'verifyOrderMail' ? [scheduled.taskQueue?.name] : [];
  });
  return [...new Set(queues)];
}

// The three tests run side by side: each has its own workers (their own slots and queues) and its own orders,
// and the sandbox holds each order's faults apart; most of each test is waiting out the slow sends.
describe.concurrent.each(['assume-sent', 'assume-failed'] as const)('%s', (policy) => {
  it('every send slot held by a slow send: the unknown is still verified by its lookup, one mail', async () => {
    // The first slow send takes one slot; the unknown's send the other, dropped after the provider took it.
    const slow = [await createOrder(database.db), await createOrder(database.db)];
    const orderId = await createOrder(database.db);
    for (const order of slow) sandbox.queueFault(order, { kind: 'accept-then-hang', ms: HOLD_MS });
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const slowRuns = [await startMail(slow[0]!, policy)];
    await untilRequestSeen(slow[0]!, 'hung');
    const run = await startMail(orderId, policy);
    await untilRequestSeen(orderId);
    // The second slow send takes the slot the unknown's send left, within its settle delay: every slot is held
    // when the lookup is scheduled.
    slowRuns.push(await startMail(slow[1]!, policy));
    await untilRequestSeen(slow[1]!, 'hung');

    const result = await run.result();

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect((await run.describe()).status.name).toBe('COMPLETED');
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(sendRequests(orderId)).toHaveLength(1);
    expect(await rowWithVerification(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      verification: 'lookup',
    });
    expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'sent', outcome: 'accepted', unknownPolicy: null, verification: 'lookup' },
    ]);
    // Its lookups were scheduled on the lookup queue, not behind the sends.
    expect(await lookupQueuesOf(run)).toEqual([lookupTaskQueueOf(taskQueues.get(policy)!)]);
    // The slow sends end as they would anyway: each its one mail.
    for (const [index, slowRun] of slowRuns.entries()) {
      expect(await slowRun.result()).toMatchObject({ result: 'sent', outcome: 'accepted' });
      expect(sandbox.messagesFor(slow[index]!)).toHaveLength(1);
    }
  });
});

it.concurrent(
  'a pinned run’s lookups go to the lookup worker of its own build: verified, one mail',
  async () => {
    // As docs/production.md#upgrades makes a build current; the server knows the version once its workers poll.
    const cli = promisify(execFile);
    const address = ['--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace')];
    await waitFor(
      'the build to become current',
      () =>
        cli(
          pinnedTemporalCli(),
          [
            ...[
              'worker',
              'deployment',
              'set-current-version',
              '--deployment-name',
              deployment.deploymentName,
            ],
            ...['--build-id', deployment.buildId, '--yes', ...address],
          ],
          { timeout: 20_000 },
        ).then(
          () => true,
          () => undefined,
        ),
      30_000,
    );
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const run = await startMail(orderId, 'versioned');

    expect(await run.result()).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await rowWithVerification(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      verification: 'lookup',
    });
    expect(await lookupQueuesOf(run)).toEqual([lookupTaskQueueOf(taskQueues.get('versioned')!)]);
    const described = await run.describe();
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion).toMatchObject(deployment);
  },
);
