// A worker process is SIGKILLed while its send is in flight (the sandbox holds the response). Temporal only
// learns of it when the send's start-to-close timeout expires; the workflow must then settle the order by
// the policy, with one message and no row left in 'sending'.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { lookupTaskQueueOf } from '../../src/workerOptions';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  allStarted,
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess } from '../support/workerProcess';

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;

beforeAll(async () => {
  database = await openTestDatabase('killed');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
});
afterAll(async () => {
  await client.connection.close();
  await sandbox.close();
  await database.close();
});

it('a worker killed mid-send: after the send timeout the order is settled by assume-sent, nothing left sending', async () => {
  const taskQueue = `killed-${randomUUID()}`;
  const sendTimeoutMs = 8_000;
  const orderId = await createOrder(database.db);
  sandbox.queueFault(orderId, { kind: 'accept-then-hang' });

  const doomed = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    MAIL_HEADERS_TIMEOUT_MS: '2000',
    MAIL_OVERALL_TIMEOUT_MS: '3000',
    SEND_ACTIVITY_TIMEOUT_MS: String(sendTimeoutMs),
    UNKNOWN_OUTCOME_POLICY: 'assume-sent',
    // The claim carries this worker's settings to the survivor, whose verify step then waits the settle delay
    // (generic's default, 30 s) for a lookup it cannot make: the wait is not what this test is about.
    MAIL_VERIFY_SETTLE_DELAY_MS: '1000',
    MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'test: the survivor has no lookup; the policy decides',
    // The run's prebuilt bundle, as the image sets it: this test is about the kill, not webpack at start.
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  try {
    await doomed.started;
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue,
      args: [orderId],
    });
    await waitFor('the send to reach the sandbox', async () =>
      sandbox.requests().some((request) => request.orderId === orderId) ? true : undefined,
    );
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });

    // A surviving process picks the workflow up once Temporal times the dead worker's send out. Like every
    // worker process it also polls the lookup queue the dead worker's claim named (docs/design.md §6).
    const mail = testMailClient(sandbox.url);
    const survivorDeps = {
      db: database.db,
      mail,
      settings: testSettings({ sendTimeoutMs, unknownOutcomePolicy: 'assume-sent' }),
    };
    const [survivor, survivorLookups] = await allStarted([
      startTestWorker(survivorDeps, { taskQueue }),
      startTestWorker(survivorDeps, { taskQueue: lookupTaskQueueOf(taskQueue) }),
    ]);
    try {
      const result = await handle.result();
      expect(result).toMatchObject({ result: 'sent', outcome: 'unknown', attempts: 1 });
    } finally {
      await survivorLookups.stop();
      await survivor.stop();
      await mail.close();
    }
  } finally {
    doomed.child.kill('SIGKILL');
  }
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  expect(await readMailLog(database.db, orderId)).toMatchObject({
    state: 'sent',
    outcome: 'unknown',
    unknownPolicy: 'assume-sent',
  });
  const [attempt] = await listAttempts(database.db, orderId);
  expect(attempt?.error).toContain('START_TO_CLOSE');
}, 90_000);
