// Issue 22's evidence rules end to end (src/evidence/evidenceRules.ts): an answer of the provider counts only
// when it is about our request, from the place we sent it, late enough, and authentic. Each case is a way a
// "not found" that is not true sends a second mail, or a "found" that is not true loses one. Real Temporal dev
// server, real Postgres, the sandbox's provider emulations over loopback; assertions on the messages the
// sandbox holds, the rows and the workflows' results.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createActivities, type ActivityDependencies, type SendOrderMailInput } from '../../src/activities';
import { readMailLog } from '../../src/db/orderMailLog';
import { createMailTransport, type MailApiConfig } from '../../src/mail/createMailTransport';
import { mailgunMessageId } from '../../src/mail/providers/mailgun';
import { MAIL_PROVIDER_FACTS, type MailProviderName } from '../../src/mail/providers/mailProvider';
import type { DispatchGate, MailTransport, OutgoingMail } from '../../src/mail/types';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { createVerifier } from '../../src/verification/verifier';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testSettings,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import {
  attemptsWithVerification,
  holdingFirstSend,
  rowWithVerification,
  withWitness,
} from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
/**
 * Where a "not found" must wait for its witness: a send that leaves only after the attempt's 8 s send timeout
 * (and, on Mailgun, has ended a settle delay before the lookup), so the waits must outlast that.
 */
const WAITS_FOR_WITNESS: VerificationSettings = { ...VERIFY, deadlineMs: 30_000 };
const DOMAIN = 'mg.example.com';

let production: TestDatabase;
let staging: TestDatabase;
let sandbox: MailSandbox;
/** Another provider endpoint (another account, region or provider) that never saw the first request. */
let elsewhere: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  production = await openTestDatabase('evidence');
  staging = await openTestDatabase('evidence_staging');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  elsewhere = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await elsewhere?.close();
  await sandbox?.close();
  await staging?.close();
  await production?.close();
});

function mailApi(
  provider: MailProviderName,
  on: MailSandbox,
  changes: Partial<MailApiConfig> = {},
): MailApiConfig {
  return {
    provider,
    baseUrl: on.url,
    apiKey: 'sandbox-key',
    mailgunDomain: DOMAIN,
    postmarkMessageStream: 'outbound',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 1_000,
    overallTimeoutMs: 3_000,
    connections: 4,
    ...changes,
  };
}

interface WorkerSpec {
  api: MailApiConfig;
  policy: UnknownOutcomePolicy;
  db?: TestDatabase;
  deploymentId?: string;
  verify?: boolean;
  sendTimeoutMs?: number;
  /** Verification settings other than VERIFY (a deadline long enough to wait for a witness). */
  verification?: VerificationSettings;
  /** Wraps the mail transport (to hold a request on the wire). */
  transport?: (real: MailTransport) => MailTransport;
  /** Wraps the send activity (to hold a send, to run it twice). */
  send?: (
    real: (input: SendOrderMailInput) => Promise<unknown>,
  ) => (input: SendOrderMailInput) => Promise<unknown>;
}

/** A worker as its configuration makes it: its transport, and a verifier built from the same Mail API settings. */
async function worker(spec: WorkerSpec): Promise<string> {
  const verify = spec.verification ?? VERIFY;
  const real = createMailTransport(spec.api);
  const mail = spec.transport?.(real) ?? real;
  const facts = MAIL_PROVIDER_FACTS[spec.api.provider].verification!;
  const verifier =
    spec.verify === false
      ? null
      : createVerifier(
          {
            facts,
            settleDelayMs: verify.settleDelayMs,
            settleDelayOverrideReason: 'test-sized: the sandbox indexes within 300 ms',
            retentionMs: facts.retentionMs,
            lookupTimeoutMs: verify.lookupTimeoutMs,
            deadlineMs: verify.deadlineMs,
            connections: 2,
          },
          spec.api,
        );
  const deps: ActivityDependencies = {
    db: (spec.db ?? production).db,
    mail,
    settings: testSettings({
      unknownOutcomePolicy: spec.policy,
      verification: verifier === null ? null : verify,
      ...(spec.sendTimeoutMs === undefined ? {} : { sendTimeoutMs: spec.sendTimeoutMs }),
    }),
    workerIdentity: `evidence-${randomUUID().slice(0, 8)}`,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
    ...(verifier === null ? {} : { verifier: verifier.verifier }),
    ...(spec.deploymentId === undefined ? {} : { deploymentId: spec.deploymentId }),
  };
  const activities = createActivities(deps);
  const running = await startTestWorker(deps, {
    activities: {
      ...activities,
      ...(spec.send === undefined ? {} : { sendOrderMail: spec.send(activities.sendOrderMail) }),
    },
  });
  stops.push(
    () => running.stop(),
    async () => verifier?.close(),
    () => real.close(),
  );
  return running.taskQueue;
}

function run(orderId: string, taskQueue: string) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

/**
 * An orphan asked about by a worker configured differently: run 1 (on `before`) sends, and its
 * send is held (dispatched, never recorded) until it is terminated; run 2 on `after` takes the attempt over and
 * asks the provider about it, once the send timeout and the settle delay have passed since the dispatch.
 */
async function sendThenTakeOverOn(orderId: string, before: string, after: string, on: MailSandbox) {
  const first = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: before,
    args: [orderId],
  });
  await waitFor('the first send to have been taken', async () =>
    on.messagesFor(orderId).length === 1 ? true : undefined,
  );
  await first.terminate('test: the worker configuration changes while this attempt is unrecorded');
  return run(orderId, after);
}

// The findings run side by side: each test has workers and orders of its own, and where two share a destination,
// another test's send can only be a witness that its test waits for anyway (none expects "not found" to be ruled
// out for want of one).
describe.concurrent(
  'finding 1: a lookup asks where the attempt went, not what the asking worker is set up for',
  () => {
    it('MAILGUN_DOMAIN changed between the send and the lookup: inconclusive, no second mail', async () => {
      const orderId = await createOrder(production.db);
      const before = await worker({
        api: mailApi('mailgun', sandbox),
        policy: 'assume-sent',
        send: (send) => holdingFirstSend(send, (id) => id === orderId),
      });
      const after = await worker({
        api: mailApi('mailgun', sandbox, { mailgunDomain: 'mg-new.example.com' }),
        policy: 'assume-sent',
      });
      await sendThenTakeOverOn(orderId, before, after, sandbox);

      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      const [attempt, ...more] = await attemptsWithVerification(production.db, orderId);
      expect(more).toEqual([]);
      expect(attempt).toMatchObject({
        attempt: 1,
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
        verification: 'inconclusive',
      });
    });

    it('another provider endpoint (provider, region or account changed): inconclusive, no second mail', async () => {
      const orderId = await createOrder(production.db);
      const before = await worker({
        api: mailApi('generic', sandbox),
        policy: 'assume-sent',
        send: (send) => holdingFirstSend(send, (id) => id === orderId),
      });
      const after = await worker({ api: mailApi('generic', elsewhere), policy: 'assume-sent' });
      await sendThenTakeOverOn(orderId, before, after, sandbox);

      expect(sandbox.messagesFor(orderId).length + elsewhere.messagesFor(orderId).length).toBe(1);
      expect(await rowWithVerification(production.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        verification: 'inconclusive',
      });
    });
  },
);

describe.concurrent('finding 8: "ours" is our send key, which names the deployment', () => {
  it('a staging system with the same order id on the same provider account is not "found" for production', async () => {
    const orderId = await createOrder(production.db);
    // Staging's copy of the shop: the same order id, its own database, the same provider account.
    await staging.db.query(
      `INSERT INTO orders (id, customer_name, customer_email, status, ordered_at, confirmed_at)
       VALUES ($1, 'Staging', 'staging@example.com', 'confirmed', now(), now())`,
      [orderId],
    );
    await staging.db.query(
      `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen) VALUES ($1, 1, 'x', 1, 100)`,
      [orderId],
    );
    const stagingWorker = await worker({
      api: mailApi('generic', sandbox),
      policy: 'assume-sent',
      db: staging,
      deploymentId: 'staging',
      verify: false,
    });
    const productionWorker = await worker({
      api: mailApi('generic', sandbox),
      policy: 'assume-sent',
      deploymentId: 'production',
      verification: WAITS_FOR_WITNESS,
    });
    await run(orderId, stagingWorker);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);

    // Production's request is dropped before the provider processed it: its customer has no mail yet.
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    const result = await withWitness(run(orderId, productionWorker), {
      db: production.db,
      orderId,
      dispatched: () => sandbox.requests().filter((request) => request.orderId === orderId).length >= 2,
      sendWitness: async () => run(await createOrder(production.db), productionWorker),
    });

    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(2);
    const productionMessage = messages.find((message) => message.to !== 'staging@example.com');
    expect(productionMessage).toBeDefined();
    expect(result).toMatchObject({
      result: 'sent',
      outcome: 'accepted',
      providerMessageId: productionMessage!.id,
    });
    expect(await attemptsWithVerification(production.db, orderId)).toMatchObject([
      { attempt: 1, outcome: 'not_sent', verification: 'lookup' },
      { attempt: 2, outcome: 'accepted' },
    ]);
  });
});

/** An event in order_mail_provider_events as a forged or stale delivery would have stored it. */
async function storeEvent(event: {
  provider: 'sendgrid' | 'mailgun';
  orderId: string;
  sendKey: string;
  messageId: string;
  occurredAt: Date;
}) {
  await production.db.query(
    `INSERT INTO order_mail_provider_events
       (provider, provider_event_id, order_id, send_key, provider_message_id, event_type, occurred_at, reason)
     VALUES ($1, $2, $3, $4, $5, 'accepted', $6, NULL)`,
    [
      event.provider,
      `forged-${randomUUID()}`,
      event.orderId,
      event.sendKey,
      event.messageId,
      event.occurredAt,
    ],
  );
}

/** The send keys this order's first send may carry: this build's, and the one before deployment ids. */
const keysOf = (orderId: string) => [
  `order-confirmation/default/${orderId}/0`,
  `order-confirmation/${orderId}/0`,
];

describe.concurrent('finding 7: a webhook event counts only when it is authentic for this attempt', () => {
  it('Mailgun: a fresh event with our key and Message-Id (a forged signed triple) does not settle alone; the lookup does', async () => {
    const orderId = await createOrder(production.db);
    for (const sendKey of keysOf(orderId)) {
      await storeEvent({
        provider: 'mailgun',
        orderId,
        sendKey,
        messageId: `<${mailgunMessageId(sendKey, DOMAIN)}>`,
        occurredAt: new Date(Date.now() + 5_000),
      });
    }
    const mailgun = await worker({
      api: mailApi('mailgun', sandbox),
      policy: 'assume-sent',
      verification: WAITS_FOR_WITNESS,
    });
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    const result = await withWitness(run(orderId, mailgun), {
      db: production.db,
      orderId,
      dispatched: () => sandbox.requests().some((request) => request.orderId === orderId),
      sendWitness: async () => run(await createOrder(production.db), mailgun),
    });

    // The event lied: the provider never had the mail. The lookup says so, and the mail is sent.
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(await attemptsWithVerification(production.db, orderId)).toMatchObject([
      { attempt: 1, outcome: 'not_sent', verification: 'lookup' },
      { attempt: 2, outcome: 'accepted' },
    ]);
  });

  it('SendGrid: an event dated before the dispatch (1970) is not this attempt’s; the policy decides', async () => {
    const orderId = await createOrder(production.db);
    for (const sendKey of keysOf(orderId)) {
      await storeEvent({
        provider: 'sendgrid',
        orderId,
        sendKey,
        messageId: 'sg-stale',
        occurredAt: new Date(1_000),
      });
    }
    const sendgrid = await worker({ api: mailApi('sendgrid', sandbox), policy: 'assume-failed' });
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    const result = await run(orderId, sendgrid);

    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    const [first] = await attemptsWithVerification(production.db, orderId);
    expect(first).toMatchObject({
      attempt: 1,
      outcome: 'unknown',
      unknownPolicy: 'assume-failed',
      verification: 'inconclusive',
    });
  });
});

describe.concurrent(
  'finding 5: a second execution of a dispatched attempt waits for the first one’s request',
  () => {
    it('ALREADY_DISPATCHED while the first request is still on the wire: no "not found" before it could have ended', async () => {
      const orderId = await createOrder(production.db);
      let release: () => void = () => undefined;
      const released = new Promise<void>((resolve) => (release = resolve));
      let heldOne = false;
      const generic = await worker({
        // A 6 s deadline after the fence (inside a 12 s send timeout), so the held request outlives the first
        // lookup by far, even on a loaded machine.
        api: mailApi('generic', sandbox, { headersTimeoutMs: 5_000, overallTimeoutMs: 6_000 }),
        sendTimeoutMs: 12_000,
        policy: 'assume-sent',
        // The first request of the order waits after its fence, on the wire as it were, until released.
        transport: (real) => ({
          ...real,
          send: (mail: OutgoingMail, gate?: DispatchGate) =>
            real.send(
              mail,
              gate === undefined || mail.orderId !== orderId || heldOne
                ? gate
                : {
                    passFenceBy: gate.passFenceBy,
                    passFence: async () => {
                      await gate.passFence();
                      heldOne = true;
                      await released;
                    },
                  },
            ),
        }),
        // The send runs twice for the same attempt (a second execution): the first in the background, then
        // again once the first has passed the fence, which refuses it as already dispatched.
        send: (send) => {
          let twice = false;
          return async (input) => {
            if (input.orderId !== orderId || twice) return send(input);
            twice = true;
            void send(input).catch(() => undefined);
            await waitFor('the first execution to pass the fence', async () =>
              (await readMailLog(production.db, orderId))?.dispatchedAt ? true : undefined,
            );
            return send(input);
          };
        },
      });
      const result = run(orderId, generic);
      // Once the provider was first asked (nothing there yet: the request is still held), the request goes on.
      await waitFor('the first lookup', async () =>
        sandbox.lookups().some((lookup) => lookup.orderId === orderId) ? true : undefined,
      );
      release();
      const outcome = await result;
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(outcome).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
      expect(await rowWithVerification(production.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        verification: 'lookup',
      });
    });
  },
);
