// SES with early asks (src/verification/earlyLookups.ts): a stored event of a send in flight makes its run ask
// at once. SES has no lookup, so the ask is judged on the events alone. A genuinely signed Send event for the
// very send key but from another account must settle nothing, and must not make the policy decide before the
// settle delay either (under assume-failed that is a second mail whenever SES had in fact taken the first);
// the same event from our own account settles the send at once. Real Temporal dev server, Postgres, the
// sandbox's SES emulation and SNS signing, the real receiver over loopback.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { ReceivedMessage } from '../../packages/sandbox/src/records';
import { SANDBOX_SNS_TOPIC_ARN } from '../../packages/sandbox/src/sns';
import { readMailLog } from '../../src/db/orderMailLog';
import { PROVIDER_EVENT_SIGNAL } from '../../src/shared/workflowContract';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { startEarlyLookups, type EarlyLookups } from '../../src/verification/earlyLookups';
import { DEFAULT_SNS_CERT_HOST_PATTERN } from '../../src/webhooks/snsWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { attemptsWithVerification, testVerifier } from '../support/verificationKit';

// Far longer than the test waits: a run that decides only at the end of it does not decide during the test.
const SETTLE_MS = 120_000;
const VERIFY: VerificationSettings = { settleDelayMs: SETTLE_MS, lookupTimeoutMs: 800, deadlineMs: 8_000 };
const EventType = temporal.api.enums.v1.EventType;

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let client: Client;
let early: EarlyLookups;
let taskQueue: string;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await openTestDatabase('ses_early_event');
  sandbox = await startMailSandbox({ apiKey: 'sandbox-key', webhooks: { delayMs: 50 } });
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: null,
    mailgunSigningKey: null,
    sns: {
      topicArns: new Set([SANDBOX_SNS_TOPIC_ARN]),
      certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
      trustTestCertificateOrigin: sandbox.url,
    },
    maxAgeMs: 300_000,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url });
  client = await connectTestClient();
  const mail = testProviderMailClient('ses', sandbox.url);
  const verifier = testVerifier('ses', sandbox.url, { settings: VERIFY });
  const worker = await startTestWorker({
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-failed', verification: VERIFY }),
    verifier: verifier.verifier,
  });
  taskQueue = worker.taskQueue;
  // What src/workerPair.ts runs beside a worker whose provider posts webhooks.
  early = await startEarlyLookups({
    db: database.db,
    signal: (orderId) => client.workflow.getHandle(orderId).signal(PROVIDER_EVENT_SIGNAL),
    intervalMs: 200,
  });
  stops.push(
    () => early.stop(),
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await receiver?.close();
  await sandbox?.close();
  await database?.close();
});

/** How often the run's verify activity was scheduled. */
async function verifyAsks(orderId: string): Promise<number> {
  const history = await client.workflow.getHandle(orderId).fetchHistory();
  return (history.events ?? []).filter(
    (event) =>
      event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      event.activityTaskScheduledEventAttributes?.activityType?.name === 'verifyOrderMail',
  ).length;
}

/** Starts a run whose request is dropped before SES took it; resolves once it waits its settle delay. */
async function startWaitingRun(orderId: string) {
  sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
    workflowExecutionTimeout: '60 seconds',
  });
  const sendKey = await waitFor('the attempt to be dispatched and its run to wait', async () => {
    const { rows } = await database.db.query<{ sendKey: string | null }>(
      `SELECT dispatch_send_key AS "sendKey" FROM order_mail_log WHERE order_id = $1 AND state = 'sending'`,
      [orderId],
    );
    if (rows[0]?.sendKey == null) return undefined;
    const history = await handle.fetchHistory();
    const waiting = (history.events ?? []).some(
      (event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED,
    );
    return waiting ? rows[0].sendKey : undefined;
  });
  return { handle, sendKey };
}

async function postSendEvent(orderId: string, sendKey: string, source: { account?: string }) {
  const held = {
    id: `0100018c-early-${orderId}-000000`,
    orderId,
    to: 'customer@example.com',
    from: 'shop@example.com',
    sendKey,
    receivedAt: new Date().toISOString(),
  } as ReceivedMessage;
  const message = sandbox.sns.notification(sandbox.sns.sesEvent(held, 'Send', new Date(), source));
  const answer = await request(`${receiver.url}/webhooks/ses`, {
    method: 'POST',
    headers: sandbox.sns.headers(message),
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(5_000),
  });
  expect(answer.statusCode).toBe(200);
  expect(await answer.body.json()).toMatchObject({ stored: 1 });
}

it('a Send event from another account wakes the run, settles nothing, and the policy does not decide before the settle delay', async () => {
  const orderId = await createOrder(database.db);
  const { handle, sendKey } = await startWaitingRun(orderId);
  expect(await verifyAsks(orderId)).toBe(0);

  await postSendEvent(orderId, sendKey, { account: '444455556666' });

  // The event wakes the run and it asks at once; the answer is to wait on.
  await waitFor('the run to ask early', async () => ((await verifyAsks(orderId)) > 0 ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect((await readMailLog(database.db, orderId))?.state).toBe('sending');
  expect(await attemptsWithVerification(database.db, orderId)).toEqual([]);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  expect(sandbox.messagesFor(orderId)).toHaveLength(0);
  await handle.terminate('test over: the run would wait out its settle delay');
}, 90_000);

it('the same Send event from our account settles the send at once, long before the settle delay', async () => {
  const orderId = await createOrder(database.db);
  const started = Date.now();
  const { handle, sendKey } = await startWaitingRun(orderId);
  await postSendEvent(orderId, sendKey, {});
  expect(await handle.result()).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
  expect(Date.now() - started).toBeLessThan(SETTLE_MS / 4);
  expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
    { attempt: 1, state: 'sent', outcome: 'accepted', verification: 'webhook' },
  ]);
}, 90_000);
