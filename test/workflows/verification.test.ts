// The workflow waits, then asks: an unknown outcome with a provider that can be asked afterwards is settled by
// what the provider says, against the sandbox's emulation of each provider over loopback (real HTTP, real
// Postgres, a real Temporal dev server). Assertions are on the messages the sandbox holds, the requests it
// saw, the log row and its attempts, and the workflow's result.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  allStarted,
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import {
  attemptsWithVerification,
  rowWithVerification,
  testVerifier,
  type TestVerification,
  untilAttemptEnded,
} from '../support/verificationKit';

// The sandbox indexes a message 300 ms after it took it; the workflow waits 1.2 s before it asks: longer, as
// every provider's documented settle delay is longer than the sandbox's default lag (test/demo/runOptions.test.ts).
const INDEXING_LAG_MS = 300;
const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
const LOOKUP_PROVIDERS = ['generic', 'postmark', 'mailgun'] as const;

let database: TestDatabase;
let sandbox: MailSandbox;
/** A provider whose log is slower than the workflow's settle delay: what goes wrong then. */
let slowSandbox: MailSandbox;
/** The no-witness test's own place to send: the file's tests run side by side, and another test's send there
 * would be a witness. */
let loneSandbox: MailSandbox;
/** Posts SendGrid's and Mailgun's signed events to the receiver. */
let webhookSandbox: MailSandbox;
let receiver: WebhookServer;
let client: Client;
const stops: (() => Promise<void>)[] = [];
const workers = new Map<string, string>();

async function addWorker(
  name: string,
  provider: MailProviderName,
  policy: UnknownOutcomePolicy,
  on: MailSandbox,
  verification: TestVerification = { settings: VERIFY },
): Promise<void> {
  const mail = testProviderMailClient(provider, on.url);
  const verifier = testVerifier(provider, on.url, verification);
  const worker = await startTestWorker({
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: policy, verification: verification.settings }),
    verifier: verifier.verifier,
  });
  stops.push(
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
  workers.set(name, worker.taskQueue);
}

beforeAll(async () => {
  // Started side by side: eighteen workers one after the other spent most of the file's set-up waiting.
  // Each part assigned as it starts, so afterAll stops it even when another failed to start.
  await allStarted([
    openTestDatabase('verification').then((opened) => (database = opened)),
    // Posts no webhooks: what the lookups alone settle.
    startMailSandbox({ lookups: { indexingLagMs: INDEXING_LAG_MS } }).then((started) => (sandbox = started)),
    startMailSandbox({ lookups: { indexingLagMs: 4_000 } }).then((started) => (slowSandbox = started)),
    startMailSandbox({ lookups: { indexingLagMs: INDEXING_LAG_MS } }).then(
      (started) => (loneSandbox = started),
    ),
    startMailSandbox({
      lookups: { indexingLagMs: INDEXING_LAG_MS },
      webhooks: { delayMs: 100 },
    }).then((started) => (webhookSandbox = started)),
    connectTestClient().then((connected) => (client = connected)),
  ]);
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(webhookSandbox.webhookKeys.sendgridPublicKey),
    mailgunSigningKey: webhookSandbox.webhookKeys.mailgunSigningKey,
    maxAgeMs: 300_000,
    log: () => undefined,
  });
  webhookSandbox.configureWebhooks({ url: receiver.url });
  await allStarted([
    ...LOOKUP_PROVIDERS.flatMap((provider) => [
      ...(['assume-sent', 'assume-failed'] as const).map((policy) =>
        addWorker(`${provider}-${policy}`, provider, policy, sandbox),
      ),
      addWorker(`${provider}-no-witness`, provider, 'assume-failed', loneSandbox),
      // A "not found" waits for a witness that leaves only after the attempt's 8 s send timeout (and, on
      // Mailgun, has ended a settle delay before the lookup): a deadline that outlasts that.
      addWorker(`${provider}-witness`, provider, 'assume-sent', sandbox, {
        settings: { ...VERIFY, deadlineMs: 30_000 },
      }),
      // Its verification deadline is twice the sandbox's lag: the freshness witness can wait that long.
      addWorker(`${provider}-slow`, provider, 'assume-failed', slowSandbox, {
        settings: { ...VERIFY, settleDelayMs: 500, deadlineMs: 8_000 },
      }),
    ]),
    // SendGrid's tests run under assume-failed only: no assume-sent worker to start (issue 38).
    addWorker('sendgrid-assume-failed', 'sendgrid', 'assume-failed', webhookSandbox),
    addWorker('mailgun-webhooks', 'mailgun', 'assume-failed', webhookSandbox),
    // The workflow's timer (500 ms) is shorter than what the activity holds a "not found" to (4 s): a lookup
    // made that early must not conclude "not sent".
    addWorker('generic-early', 'generic', 'assume-sent', slowSandbox, {
      settings: { ...VERIFY, settleDelayMs: 500 },
      evidenceAfterMs: 4_000,
    }),
  ]);
}, 180_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await receiver?.close();
  await webhookSandbox?.close();
  await slowSandbox?.close();
  await loneSandbox?.close();
  await sandbox?.close();
  await database?.close();
});

async function runMail(orderId: string, worker: string) {
  return client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers.get(worker)!,
    args: [orderId],
  });
}

/**
 * Runs the order's mail and, once its request reached the sandbox and ended (its dispatch plus its send timeout,
 * on Postgres's clock), another order's on the same worker to its 2xx: the freshness witness a "not found" for
 * the first needs (src/evidence/freshnessCheck.ts).
 */
async function runWithWitness(orderId: string, worker: string, on: MailSandbox = sandbox) {
  const run = runMail(orderId, worker);
  await waitFor('the request to reach the sandbox', async () =>
    on.requests().some((request) => request.orderId === orderId) ? true : undefined,
  );
  await untilAttemptEnded(database.db, orderId);
  await runMail(await createOrder(database.db), worker);
  return run;
}

function sendRequests(on: MailSandbox, orderId: string) {
  return on.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

describe.concurrent.each(LOOKUP_PROVIDERS)(
  '%s: an unknown outcome is verified with the lookup',
  (provider) => {
    it.each(['assume-sent', 'assume-failed'] as const)(
      'accept-then-drop → verified accepted: one message, no second request (%s)',
      async (policy) => {
        const orderId = await createOrder(database.db);
        sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
        const result = await runMail(orderId, `${provider}-${policy}`);

        const messages = sandbox.messagesFor(orderId);
        expect(messages).toHaveLength(1);
        expect(sendRequests(sandbox, orderId)).toHaveLength(1);
        expect(
          sandbox.lookups().filter((lookup) => lookup.orderId === orderId).length,
        ).toBeGreaterThanOrEqual(1);
        expect(result).toMatchObject({
          result: 'sent',
          outcome: 'accepted',
          providerMessageId: messages[0]!.id,
        });
        expect(await rowWithVerification(database.db, orderId)).toEqual({
          state: 'sent',
          outcome: 'accepted',
          verification: 'lookup',
          providerMessageId: messages[0]!.id,
        });
        const [attempt, ...more] = await attemptsWithVerification(database.db, orderId);
        expect(more).toEqual([]);
        expect(attempt).toMatchObject({
          attempt: 1,
          state: 'sent',
          outcome: 'accepted',
          unknownPolicy: null,
          verification: 'lookup',
          providerMessageId: messages[0]!.id,
        });
        expect(attempt!.error).toMatch(/verified accepted: the provider's lookup shows this send/);
      },
    );

    it('drop before processing → verified not sent → retried through the claim → one message', async () => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
      // "Not found" counts only once the lookup shows a later send that got its 2xx (the freshness witness).
      const result = await runWithWitness(orderId, `${provider}-witness`);

      const messages = sandbox.messagesFor(orderId);
      expect(messages).toHaveLength(1);
      expect(sendRequests(sandbox, orderId)).toHaveLength(2);
      expect(result).toMatchObject({
        result: 'sent',
        outcome: 'accepted',
        attempts: 2,
        providerMessageId: messages[0]!.id,
      });
      const attempts = await attemptsWithVerification(database.db, orderId);
      expect(attempts).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null, verification: 'lookup' },
        {
          attempt: 2,
          state: 'sent',
          outcome: 'accepted',
          verification: null,
          providerMessageId: messages[0]!.id,
        },
      ]);
      expect(attempts[0]!.error).toMatch(
        /verified not sent: the provider's lookup has no message with this send's key/,
      );
    });

    it('a send accepted while the dropped attempt was still on the wire is no witness: the policy decides', async () => {
      const orderId = await createOrder(database.db);
      loneSandbox.queueFault(orderId, { kind: 'drop-without-processing' });
      // The other order is sent at once, while this attempt's request may still have been under way (within its
      // send timeout): the provider may have taken it before ours, so its showing proves nothing about ours.
      const run = runMail(orderId, `${provider}-no-witness`);
      await waitFor('the request to reach the sandbox', async () =>
        loneSandbox.requests().some((request) => request.orderId === orderId) ? true : undefined,
      );
      await runMail(await createOrder(database.db), `${provider}-no-witness`);
      await run;

      expect(loneSandbox.messagesFor(orderId)).toHaveLength(1);
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
    });

    it('lookup failing past its deadline → the policy, recorded as such, with the reason', async () => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
      sandbox.queueLookupFault(orderId, { kind: 'status', status: 503 }, 50);
      const result = await runMail(orderId, `${provider}-assume-sent`);

      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(sendRequests(sandbox, orderId)).toHaveLength(1);
      expect(result).toMatchObject({ result: 'sent', outcome: 'unknown' });
      expect(await rowWithVerification(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        verification: 'inconclusive',
      });
      const [attempt] = await attemptsWithVerification(database.db, orderId);
      expect(attempt).toMatchObject({
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
        verification: 'inconclusive',
      });
      expect(attempt!.error).toMatch(
        /settled by policy assume-sent because verification could not decide: the lookup did not succeed within its deadline of 4 s/,
      );
      // It kept asking until the deadline: more than one lookup, every one answered 503.
      const lookups = sandbox.lookups().filter((lookup) => lookup.orderId === orderId);
      expect(lookups.length).toBeGreaterThan(1);
      expect(lookups.every((lookup) => lookup.status === 503)).toBe(true);
    });

    it('lookup hanging past its own timeout until the deadline → the policy, recorded as such', async () => {
      // Each lookup is cut off by its own timeout (800 ms) and retried; none answers before the deadline (4 s).
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
      sandbox.queueLookupFault(orderId, { kind: 'hang' }, 50);
      const result = await runMail(orderId, `${provider}-assume-failed`);

      // assume-failed: the policy sends again, so the customer has two mails; that is the policy's price, and the
      // attempt says it was the policy because verification could not decide.
      expect(sendRequests(sandbox, orderId)).toHaveLength(2);
      expect(sandbox.messagesFor(orderId)).toHaveLength(2);
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
      const [attempt] = await attemptsWithVerification(database.db, orderId);
      expect(attempt).toMatchObject({
        attempt: 1,
        state: 'failed',
        outcome: 'unknown',
        unknownPolicy: 'assume-failed',
        verification: 'inconclusive',
      });
      expect(attempt!.error).toMatch(/settled by policy assume-failed because verification could not decide/);
      const lookups = sandbox.lookups().filter((lookup) => lookup.orderId === orderId);
      expect(lookups.length).toBeGreaterThan(1);
    });

    it('a settle delay shorter than the provider’s indexing lag: "not found" does not count, it waits, one mail', async () => {
      // The delay is set below the provider's lag: the accepted mail is not indexed yet and the lookup says "not
      // found". Without a witness (a later send that got its 2xx, shown by the same lookup) that proves nothing:
      // the workflow asks again until the lookup catches up and shows the mail (src/evidence/freshnessCheck.ts).
      // Before the witness, this recorded "verified not sent" and the retry sent a second mail.
      const orderId = await createOrder(database.db);
      slowSandbox.queueFault(orderId, { kind: 'accept-then-drop' });
      await runMail(orderId, `${provider}-slow`);

      expect(slowSandbox.messagesFor(orderId)).toHaveLength(1);
      const attempts = await attemptsWithVerification(database.db, orderId);
      expect(attempts).toMatchObject([{ attempt: 1, outcome: 'accepted', verification: 'lookup' }]);
      expect(attempts[0]!.error).toMatch(/having waited because the lookup found nothing, but /);
    });
  },
);

describe.concurrent('a lookup made before "not found" can count', () => {
  it('never concludes "not sent": it waits until it can, asks again, and finds the mail (one mail)', async () => {
    // The workflow's timer (500 ms) is shorter than what the activity holds a "not found" to (4 s): the early
    // lookup finds nothing, and the verdict is to wait (src/evidence/evidenceRules.ts), not "not sent".
    const orderId = await createOrder(database.db);
    slowSandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const result = await runMail(orderId, 'generic-early');

    expect(slowSandbox.messagesFor(orderId)).toHaveLength(1);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
    const lookups = slowSandbox.lookups().filter((lookup) => lookup.orderId === orderId);
    expect(lookups.length).toBeGreaterThanOrEqual(2);
    const [attempt, ...more] = await attemptsWithVerification(database.db, orderId);
    expect(more).toEqual([]);
    expect(attempt).toMatchObject({ outcome: 'accepted', unknownPolicy: null, verification: 'lookup' });
  });
});

describe.concurrent('SendGrid: verified by its signed webhook', () => {
  it('accept-then-drop: the processed event settles the unknown send as verified accepted, one message', async () => {
    const orderId = await createOrder(database.db);
    webhookSandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const result = await runMail(orderId, 'sendgrid-assume-failed');

    const messages = webhookSandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(sendRequests(webhookSandbox, orderId)).toHaveLength(1);
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
  });

  it('drop before processing: no event, which proves nothing, so the policy decides (assume-failed: sent again, one mail)', async () => {
    const orderId = await createOrder(database.db);
    webhookSandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    const result = await runMail(orderId, 'sendgrid-assume-failed');

    expect(webhookSandbox.messagesFor(orderId)).toHaveLength(1);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    const attempts = await attemptsWithVerification(database.db, orderId);
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
    expect(attempts[0]!.error).toMatch(/no sendgrid event for this send within the settle delay/);
  });
});

describe.concurrent('Mailgun: a webhook event never settles alone, the lookup decides', () => {
  it('accept-then-drop with every lookup answering 503: the event is kept, but the policy decides (inconclusive)', async () => {
    // Mailgun signs only timestamp and token, not the event beside them: an event proves nothing by itself
    // where a lookup can be asked (src/evidence/evidenceRules.ts). assume-failed sends again: its price.
    const orderId = await createOrder(database.db);
    webhookSandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    webhookSandbox.queueLookupFault(orderId, { kind: 'status', status: 503 }, 50);
    await runMail(orderId, 'mailgun-webhooks');

    const attempts = await attemptsWithVerification(database.db, orderId);
    expect(attempts[0]).toMatchObject({
      attempt: 1,
      outcome: 'unknown',
      unknownPolicy: 'assume-failed',
      verification: 'inconclusive',
    });
    expect(attempts.some((attempt) => attempt.verification === 'webhook')).toBe(false);
  });
});
