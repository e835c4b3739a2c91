// A worker process that is stopped (SIGTERM) mid-run still delivers its spans: the exporter's last batch goes
// out in the orderly stop, after the running send has finished and been recorded. The worker's batch delay
// (OTEL_BSP_SCHEDULE_DELAY) is set far past the test's length, so no batch leaves on its own: the receiver
// (test/support/otlpReceiver.ts, in this process) holds nothing of the order while the send is in flight, and
// everything once the process has exited.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { onlySpan, spanNames, startOtlpReceiver, type OtlpReceiver } from '../support/otlpReceiver';

const WORKER_SERVICE = 'order-confirmation-mail-worker-stopping';

let receiver: OtlpReceiver;
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  database = await openTestDatabase('trace_flush');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGKILL');
  await worker?.exited;
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
  await receiver?.close();
});

it('SIGTERM during a send: the spans of the finished activities and of the drained send reach the collector before the worker exits', async () => {
  const taskQueue = `trace-flush-${process.pid}-${Date.now()}`;
  const orderId = await createOrder(database.db);
  // The sandbox keeps the message at once and answers 202 only 6 s later: a send in flight at SIGTERM.
  sandbox.queueFault(orderId, { kind: 'accept-then-hang', ms: 6_000 });
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    MAIL_VERIFY: 'off',
    MAIL_HEADERS_TIMEOUT_MS: '8000',
    MAIL_OVERALL_TIMEOUT_MS: '9000',
    SEND_ACTIVITY_TIMEOUT_MS: '15000',
    WORKER_SHUTDOWN_GRACE_MS: '30000',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_SERVICE_NAME: WORKER_SERVICE,
    // Ten minutes: only the orderly stop's flush can deliver a span within this test.
    OTEL_BSP_SCHEDULE_DELAY: '600000',
  });
  await worker.started;
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
  });
  await waitFor('the send to reach the sandbox', async () =>
    sandbox.messagesFor(orderId).length > 0 ? true : undefined,
  );
  // Claimed and sending: the claim's spans have ended, and sit in the worker's batch. Twice the default
  // batch delay later, a worker that exported on its own (1 s) would have delivered them.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });
  expect(receiver.traceWith(WORKER_SERVICE, { temporalWorkflowId: orderId })).toEqual([]);

  worker.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  expect((await handle.describe()).status.name).toBe('COMPLETED');

  // The exporter's last request was answered before the process exited: the receiver holds it all now.
  const found = receiver.traceWith(WORKER_SERVICE, { temporalWorkflowId: orderId });
  expect(receiver.failures).toEqual([]);
  expect(spanNames(found)).toEqual(
    expect.arrayContaining([
      'RunWorkflow:orderConfirmationMail',
      'StartActivity:claimOrderMail',
      'RunActivity:claimOrderMail',
      'StartActivity:sendOrderMail',
      'RunActivity:sendOrderMail',
      'mail.http.request',
      'StartActivity:recordOrderMailOutcome',
      'RunActivity:recordOrderMailOutcome',
    ]),
  );
  expect(onlySpan(found, 'mail.http.request').attributes['mail.outcome']).toBe('accepted');
  expect(onlySpan(found, 'RunActivity:claimOrderMail').attributes.temporalWorkflowId).toBe(orderId);
}, 120_000);
