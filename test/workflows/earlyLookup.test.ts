// Issue 22: "a webhook only triggers an early lookup, it never settles alone". A Mailgun send whose answer was
// lost (unknown outcome) waits its settle delay before the lookup is asked; a signed webhook event of that
// send, stored by the receiver, makes the workers signal the run (src/verification/earlyLookups.ts) and it asks
// the lookup at once. The lookup decides: it shows the message, so the attempt is verified by the lookup long
// before the settle delay; an event of a send the provider never took (Mailgun signs no event data) makes the
// run ask early too, and the lookup's "not found" is too early to count, so nothing is settled: the row stays
// `sending`, the run waits on. Real Temporal dev server, Postgres, the sandbox's Mailgun emulation posting its
// signed webhooks to the real receiver over loopback.
import { randomBytes } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { request } from 'undici';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { mailgunMessageId } from '../../src/evidence/messageIdentity';
import { PROVIDER_EVENT_SIGNAL } from '../../src/shared/workflowContract';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { startEarlyLookups, type EarlyLookups } from '../../src/verification/earlyLookups';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
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

// Far longer than the test waits: a run that asks only at the end of it does not finish in time.
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
  database = await openTestDatabase('early_lookup');
  // The lookup shows a message as soon as it is taken. With a 200 ms lag the early ask (the event is read within
  // 200 ms of being stored, 50 ms after the send) could come before the message was in the index: "not found"
  // too early only means "wait", the run then waited out the settle delay, and CI once timed out so.
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 0 }, webhooks: { delayMs: 50 } });
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
    mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
    maxAgeMs: 300_000,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url });
  client = await connectTestClient();
  const mail = testProviderMailClient('mailgun', sandbox.url);
  const verifier = testVerifier('mailgun', sandbox.url, { settings: VERIFY });
  const worker = await startTestWorker({
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-failed', verification: VERIFY }),
    verifier: verifier.verifier,
  });
  taskQueue = worker.taskQueue;
  // What src/worker.ts runs beside a worker whose provider posts webhooks.
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

/** The times the run's verify activity was scheduled, ms after the run started. */
async function verifyAsksAfterStart(orderId: string): Promise<number[]> {
  const history = await client.workflow.getHandle(orderId).fetchHistory();
  const events = history.events ?? [];
  const startedAt = Number(events[0]?.eventTime?.seconds ?? 0) * 1000;
  return events
    .filter(
      (event) =>
        event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
        event.activityTaskScheduledEventAttributes?.activityType?.name === 'verifyOrderMail',
    )
    .map(
      (event) =>
        Number(event.eventTime?.seconds ?? 0) * 1000 +
        Math.floor((event.eventTime?.nanos ?? 0) / 1e6) -
        startedAt,
    );
}

it('a webhook event of an accepted send whose answer was lost: the lookup is asked at once and settles it, long before the settle delay', async () => {
  const orderId = await createOrder(database.db);
  sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
  const started = Date.now();
  const result = await client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
    workflowExecutionTimeout: '60 seconds',
  });
  expect(Date.now() - started).toBeLessThan(SETTLE_MS / 4);
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  // The event was stored, but the lookup decided: verified by 'lookup', never by the webhook.
  const events = (
    await database.db.query<{ eventType: string }>(
      `SELECT event_type AS "eventType" FROM order_mail_provider_events WHERE order_id = $1`,
      [orderId],
    )
  ).rows;
  expect(events.map((event) => event.eventType)).toContain('accepted');
  expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
    { attempt: 1, state: 'sent', outcome: 'accepted', verification: 'lookup' },
  ]);
  const asks = await verifyAsksAfterStart(orderId);
  expect(asks.length).toBeGreaterThan(0);
  expect(asks[0]!).toBeLessThan(SETTLE_MS / 4);
  // The run got the signal and acted on it under its patch: its history replays with this build.
  const history = await client.workflow.getHandle(orderId).fetchHistory();
  expect(
    (history.events ?? []).some(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    ),
  ).toBe(true);
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: inject('workflowBundlePath') } },
    history,
    orderId,
  );
}, 90_000);

it('a signed event of a send the provider never took makes the run ask early, and settles nothing: the lookup decides', async () => {
  const orderId = await createOrder(database.db);
  sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
    workflowExecutionTimeout: '60 seconds',
  });
  const dispatched = await waitFor('the attempt to be dispatched and its outcome unknown', async () => {
    const row = await readMailLog(database.db, orderId);
    const facts = await database.db.query<{ sendKey: string | null; scope: string | null }>(
      `SELECT dispatch_send_key AS "sendKey", dispatch_scope AS scope FROM order_mail_log WHERE order_id = $1`,
      [orderId],
    );
    const settled = await attemptsWithVerification(database.db, orderId);
    if (row?.state !== 'sending' || facts.rows[0]?.sendKey == null || settled.length > 0) return undefined;
    // The send ended (its answer lost) and the run waits its settle delay.
    const history = await handle.fetchHistory();
    const waiting = (history.events ?? []).some(
      (event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED,
    );
    return waiting ? { sendKey: facts.rows[0].sendKey, domain: facts.rows[0].scope! } : undefined;
  });
  expect(await verifyAsksAfterStart(orderId)).toEqual([]);

  // A fresh signed triple carrying an event for this very send (Mailgun signs no event data): stored.
  const timestamp = String(Math.floor(Date.now() / 1000));
  const token = randomBytes(25).toString('hex');
  const posted = await request(`${receiver.url}/webhooks/mailgun`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      signature: {
        timestamp,
        token,
        signature: mailgunSignature(sandbox.webhookKeys.mailgunSigningKey, timestamp, token),
      },
      'event-data': {
        event: 'accepted',
        id: `forged-${token.slice(0, 12)}`,
        timestamp: Date.now() / 1000,
        message: { headers: { 'message-id': mailgunMessageId(dispatched.sendKey, dispatched.domain) } },
        'user-variables': { order_id: orderId, send_key: dispatched.sendKey },
      },
    }),
  });
  expect(posted.statusCode).toBe(200);
  expect(await posted.body.json()).toMatchObject({ stored: 1 });

  // The run asks the lookup at once; "not found" is too early to count, so it waits on, unsettled.
  const asks = await waitFor('the run to ask the lookup', async () => {
    const times = await verifyAsksAfterStart(orderId);
    return times.length > 0 ? times : undefined;
  });
  expect(asks[0]!).toBeLessThan(SETTLE_MS / 4);
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  expect((await readMailLog(database.db, orderId))?.state).toBe('sending');
  expect(await attemptsWithVerification(database.db, orderId)).toEqual([]);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  expect(sandbox.messagesFor(orderId)).toHaveLength(0);
  await handle.terminate('test over: the run would wait out its settle delay');
}, 90_000);
