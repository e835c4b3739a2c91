// Amazon SES end to end: the worker sends through the sandbox's SES emulation (SigV4 checked), the sandbox's SNS
// posts the Send event to the receiver, and the workflow's unknown outcome is settled by it; a Send event as
// genuinely signed but from another account or configuration set settles nothing. Real HTTP, real Postgres, a
// real Temporal dev server; assertions on the messages the sandbox holds, its requests, the log row's recorded
// destination and the attempts.
import type { Client } from '@temporalio/client';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { ReceivedMessage } from '../../packages/sandbox/src/records';
import { SANDBOX_AWS_ACCOUNT_ID, SANDBOX_SES_REGION } from '../../packages/sandbox/src/providers/ses';
import { SANDBOX_SNS_TOPIC_ARN } from '../../packages/sandbox/src/sns';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { DEFAULT_SNS_CERT_HOST_PATTERN } from '../../src/webhooks/snsWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  TEST_SES_CONFIGURATION_SET,
  testProviderMailClient,
  testSettings,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { attemptsWithVerification, testVerifier } from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_500, lookupTimeoutMs: 800, deadlineMs: 4_000 };

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let client: Client;
const stops: (() => Promise<void>)[] = [];
const workers = new Map<UnknownOutcomePolicy, string>();

beforeAll(async () => {
  database = await openTestDatabase('ses-verification');
  sandbox = await startMailSandbox({ apiKey: 'sandbox-key', webhooks: { delayMs: 100 } });
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
  for (const policy of ['assume-sent', 'assume-failed'] as const) {
    const mail = testProviderMailClient('ses', sandbox.url);
    const verifier = testVerifier('ses', sandbox.url, { settings: VERIFY });
    const worker = await startTestWorker({
      db: database.db,
      mail,
      settings: testSettings({ unknownOutcomePolicy: policy, verification: VERIFY }),
      verifier: verifier.verifier,
    });
    stops.push(
      () => worker.stop(),
      () => verifier.close(),
      () => mail.close(),
    );
    workers.set(policy, worker.taskQueue);
  }
}, 180_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await receiver?.close();
  await sandbox?.close();
  await database?.close();
});

async function runMail(orderId: string, policy: UnknownOutcomePolicy) {
  return client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers.get(policy)!,
    args: [orderId],
  });
}

function sendRequests(orderId: string) {
  return sandbox.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

// Side by side (issue 38): each test has its own orders; the sandbox's faults, its messages and requests, and
// the provider events read back are keyed by order, and an SES verdict rests on the attempt's own events only.
describe.concurrent('SES: an unknown outcome settled by the Send event SNS delivers', () => {
  it('the connection drops after SES took the mail: its SNS events (Send first) settle it as accepted, exactly one mail (even under assume-failed)', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const result = await runMail(orderId, 'assume-failed');

    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(sendRequests(orderId)).toHaveLength(1);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', providerMessageId: messages[0]!.id });
    expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
      {
        attempt: 1,
        state: 'sent',
        outcome: 'accepted',
        verification: 'webhook',
        providerMessageId: messages[0]!.id,
      },
    ]);
    const { rows } = await database.db.query<{ provider: string; scope: string; account: string }>(
      `SELECT dispatch_provider AS provider, dispatch_scope AS scope, dispatch_account AS account
         FROM order_mail_log WHERE order_id = $1`,
      [orderId],
    );
    expect(rows).toEqual([
      {
        provider: 'ses',
        scope: `${SANDBOX_SES_REGION}/${TEST_SES_CONFIGURATION_SET}`,
        account: SANDBOX_AWS_ACCOUNT_ID,
      },
    ]);
  });

  it('dropped before SES processed it: no Send event by the deadline, which proves nothing, so the policy decides', async () => {
    const failed = await createOrder(database.db);
    sandbox.queueFault(failed, { kind: 'drop-without-processing' });
    const resent = await runMail(failed, 'assume-failed');
    expect(sandbox.messagesFor(failed)).toHaveLength(1);
    expect(resent).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    const attempts = await attemptsWithVerification(database.db, failed);
    expect(attempts).toMatchObject([
      {
        attempt: 1,
        state: 'failed',
        outcome: 'unknown',
        unknownPolicy: 'assume-failed',
        verification: 'inconclusive',
      },
      { attempt: 2, state: 'sent', outcome: 'accepted' },
    ]);
    expect(attempts[0]!.error).toMatch(/no ses event for this send within the settle delay/);

    const assumed = await createOrder(database.db);
    sandbox.queueFault(assumed, { kind: 'drop-without-processing' });
    await runMail(assumed, 'assume-sent');
    expect(sandbox.messagesFor(assumed)).toEqual([]);
    expect(await attemptsWithVerification(database.db, assumed)).toMatchObject([
      { attempt: 1, outcome: 'unknown', unknownPolicy: 'assume-sent', verification: 'inconclusive' },
    ]);
  });
});

/**
 * Starts the order's run with its request dropped before SES took it, and once the attempt has passed its fence
 * posts a Send event for its very send key, signed by SNS for our topic, from `source` (another account or
 * configuration set, or ours). Returns the run's result.
 */
async function runWithHandMadeSendEvent(
  orderId: string,
  policy: UnknownOutcomePolicy,
  source: { account?: string; configurationSet?: string },
) {
  sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers.get(policy)!,
    args: [orderId],
  });
  const sendKey = await waitFor('the attempt past its dispatch fence', async () => {
    const { rows } = await database.db.query<{ sendKey: string }>(
      `SELECT dispatch_send_key AS "sendKey" FROM order_mail_log
        WHERE order_id = $1 AND state = 'sending' AND dispatched_at IS NOT NULL`,
      [orderId],
    );
    return rows[0]?.sendKey;
  });
  const held = {
    id: `0100018c-elsewhere-${orderId}-000000`,
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
  await answer.body.dump();
  // Authentic and of our tags: taken (and stored), whatever it will count for.
  expect(answer.statusCode).toBe(200);
  const { rows } = await database.db.query<{ account: string; configurationSet: string }>(
    `SELECT sending_account AS account, configuration_set AS "configurationSet"
       FROM order_mail_provider_events WHERE order_id = $1`,
    [orderId],
  );
  expect(rows).toEqual([
    {
      account: source.account ?? SANDBOX_AWS_ACCOUNT_ID,
      configurationSet: source.configurationSet ?? TEST_SES_CONFIGURATION_SET,
    },
  ]);
  return handle.result();
}

describe.concurrent(
  'SES: an event counts only from the attempt’s configuration set and sending account',
  () => {
    it.each([
      ['another account (its SES allowed to publish to our topic)', { account: '444455556666' }],
      [
        'another configuration set (a staging deployment on the same topic)',
        { configurationSet: 'staging-events' },
      ],
    ])(
      '%s: the genuinely signed Send event moves no row; the policy decides, and the customer gets one mail',
      async (_, source) => {
        const orderId = await createOrder(database.db);
        const result = await runWithHandMadeSendEvent(orderId, 'assume-failed', source);
        expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
        expect(sandbox.messagesFor(orderId)).toHaveLength(1);
        expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
          {
            attempt: 1,
            state: 'failed',
            outcome: 'unknown',
            unknownPolicy: 'assume-failed',
            verification: 'inconclusive',
          },
          { attempt: 2, state: 'sent', outcome: 'accepted' },
        ]);
        // The attempt's audit row says why the event did not count.
        const attempts = await attemptsWithVerification(database.db, orderId);
        expect(attempts[0]!.error).toMatch(
          /1 event\(s\) naming it came from another configuration set or account/,
        );
      },
    );

    it('the same event from our account and configuration set settles the attempt as accepted', async () => {
      const orderId = await createOrder(database.db);
      const result = await runWithHandMadeSendEvent(orderId, 'assume-failed', {});
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
      expect(await attemptsWithVerification(database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'sent', outcome: 'accepted', verification: 'webhook' },
      ]);
    });
  },
);
