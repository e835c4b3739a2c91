// Failover (docs/design.md, "Failover"): postmark first, mailgun second, each its own sandbox over loopback (real
// HTTP, real Postgres, a real Temporal dev server). An attempt moves to mailgun only when its postmark attempt is
// known not to have been sent; an unknown that could not be verified stays with postmark under both policies;
// and verification asks the provider the attempt went to, whatever the worker's list says by then. Assertions
// are on each sandbox's received messages and requests, and on the row and its attempts.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import { testVerifier, untilAttemptEnded } from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
/** A "not found" waits for a witness that leaves only after the attempt's 8 s send timeout: a longer deadline. */
const WAITS_FOR_WITNESS: VerificationSettings = { ...VERIFY, deadlineMs: 30_000 };

let database: TestDatabase;
let postmark: MailSandbox;
let mailgun: MailSandbox;
/** Closed at once: every connection to it is refused, as to a provider that is down. */
let down: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];

/** The worker's parts for an ordered list of (provider, sandbox). */
function providerParts(
  policy: UnknownOutcomePolicy,
  list: [MailProviderName, MailSandbox][],
  verify: VerificationSettings = VERIFY,
): Omit<ActivityDependencies, 'workerIdentity' | 'mailIdentity'> {
  const transports = list.map(([provider, on]) => testProviderMailClient(provider, on.url));
  const verifiers = list.map(([provider, on]) => testVerifier(provider, on.url, { settings: verify }));
  stops.push(
    ...transports.map((transport) => () => transport.close()),
    ...verifiers.map((verifier) => () => verifier.close()),
  );
  const settings = testSettings({ unknownOutcomePolicy: policy, verification: verify });
  return {
    db: database.db,
    mail: transports[0]!,
    mailProviders: transports,
    verifiers: verifiers.map((verifier) => verifier.verifier),
    settings,
    // High enough that no test here trips the shared skip: each order's own attempts decide.
    providerHealth: { skipAfterFailures: 1_000, skipForMs: 1_000 },
  };
}

async function worker(
  policy: UnknownOutcomePolicy,
  list: [MailProviderName, MailSandbox][],
  taskQueue?: string,
  verify: VerificationSettings = VERIFY,
): Promise<RunningTestWorker> {
  const running = await startTestWorker(
    providerParts(policy, list, verify),
    taskQueue === undefined ? {} : { taskQueue },
  );
  stops.push(() => running.stop());
  return running;
}

const workers = new Map<string, RunningTestWorker>();

beforeAll(async () => {
  database = await openTestDatabase('failover');
  postmark = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  mailgun = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  down = await startMailSandbox();
  await down.close();
  client = await connectTestClient();
  for (const policy of ['assume-sent', 'assume-failed'] as const) {
    workers.set(
      policy,
      await worker(policy, [
        ['postmark', postmark],
        ['mailgun', mailgun],
      ]),
    );
  }
  workers.set(
    'witness',
    await worker(
      'assume-sent',
      [
        ['postmark', postmark],
        ['mailgun', mailgun],
      ],
      undefined,
      WAITS_FOR_WITNESS,
    ),
  );
  workers.set(
    'down',
    await worker('assume-sent', [
      ['postmark', down],
      ['mailgun', mailgun],
    ]),
  );
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await client?.connection.close();
  await mailgun?.close();
  await postmark?.close();
  await database?.close();
});

function runMail(orderId: string, taskQueue: string) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

function sends(on: MailSandbox, orderId: string) {
  return on.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

async function attemptProviders(orderId: string) {
  const { rows } = await database.db.query<{
    attempt: number;
    provider: string;
    outcome: string;
    choice: string;
  }>(
    `SELECT attempt, provider, outcome, provider_choice AS choice FROM order_mail_attempts
      WHERE order_id = $1 ORDER BY attempt`,
    [orderId],
  );
  return rows;
}

describe('an attempt known not sent at the primary moves to the second', () => {
  it('throttled (429) at postmark → mailgun sends it: one mail for the customer', async () => {
    const orderId = await createOrder(database.db);
    postmark.queueFault(orderId, { kind: 'status', status: 429 });
    const result = await runMail(orderId, workers.get('assume-sent')!.taskQueue);

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(postmark.messagesFor(orderId)).toHaveLength(0);
    expect(mailgun.messagesFor(orderId)).toHaveLength(1);
    expect(await attemptProviders(orderId)).toEqual([
      { attempt: 1, provider: 'postmark', outcome: 'not_sent', choice: 'first' },
      { attempt: 2, provider: 'mailgun', outcome: 'accepted', choice: 'after-not-sent' },
    ]);
  });

  it('connections refused at postmark → mailgun sends it', async () => {
    const orderId = await createOrder(database.db);
    const result = await runMail(orderId, workers.get('down')!.taskQueue);

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(mailgun.messagesFor(orderId)).toHaveLength(1);
    expect((await attemptProviders(orderId)).map((row) => [row.provider, row.outcome])).toEqual([
      ['postmark', 'not_sent'],
      ['mailgun', 'accepted'],
    ]);
    // The failure was counted for the shared health (after the send reported, not before): new attempts
    // would skip postmark past the threshold.
    await waitFor('the refused send to be counted against postmark', async () => {
      const { rows } = await database.db.query<{ failures: number }>(
        `SELECT consecutive_failures AS failures FROM order_mail_provider_health WHERE provider = 'postmark'`,
      );
      return (rows[0]?.failures ?? 0) >= 1 ? true : undefined;
    });
  });

  it('verified not found at postmark → mailgun sends it', async () => {
    const orderId = await createOrder(database.db);
    postmark.queueFault(orderId, { kind: 'drop-without-processing' });
    const taskQueue = workers.get('witness')!.taskQueue;
    const run = runMail(orderId, taskQueue);
    // "Not found" counts only once postmark's lookup shows a later send that got its 2xx and left after this
    // attempt had ended (the witness).
    await waitFor('the request to reach postmark', async () =>
      sends(postmark, orderId).length > 0 ? true : undefined,
    );
    await untilAttemptEnded(database.db, orderId);
    await runMail(await createOrder(database.db), taskQueue);
    const result = await run;

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(postmark.messagesFor(orderId)).toHaveLength(0);
    expect(mailgun.messagesFor(orderId)).toHaveLength(1);
    expect(await attemptProviders(orderId)).toMatchObject([
      { attempt: 1, provider: 'postmark', outcome: 'not_sent' },
      { attempt: 2, provider: 'mailgun', outcome: 'accepted', choice: 'after-not-sent' },
    ]);
  }, 30_000);
});

describe('an unknown at the primary that could not be verified never moves', () => {
  it.each(['assume-sent', 'assume-failed'] as const)(
    'accept-then-drop at postmark, its lookup failing: nothing ever goes to mailgun (%s)',
    async (policy) => {
      const orderId = await createOrder(database.db);
      postmark.queueFault(orderId, { kind: 'accept-then-drop' });
      // Every lookup of this order fails: verification gives up at its deadline and the policy decides.
      postmark.queueLookupFault(orderId, { kind: 'status', status: 503 }, 1_000);
      const result = await runMail(orderId, workers.get(policy)!.taskQueue);

      expect(sends(mailgun, orderId)).toHaveLength(0);
      expect(mailgun.messagesFor(orderId)).toHaveLength(0);
      const attempts = await attemptProviders(orderId);
      expect(attempts.every((attempt) => attempt.provider === 'postmark')).toBe(true);
      if (policy === 'assume-sent') {
        expect(result).toMatchObject({ result: 'sent', outcome: 'unknown', attempts: 1 });
        expect(postmark.messagesFor(orderId)).toHaveLength(1);
      } else {
        // The policy re-sends, and the re-send stays with postmark: the lookup there can see both.
        expect(attempts[0]).toMatchObject({ provider: 'postmark', outcome: 'unknown' });
        expect(attempts[1]).toMatchObject({ provider: 'postmark', choice: 'bound' });
        expect(result).toMatchObject({ result: 'sent' });
      }
    },
    30_000,
  );
});

describe('verification asks the attempt’s own provider', () => {
  it('after the worker’s list changes to mailgun first, the postmark attempt is still asked of postmark', async () => {
    const taskQueue = `test-${randomUUID()}`;
    const first = await worker(
      'assume-failed',
      [
        ['postmark', postmark],
        ['mailgun', mailgun],
      ],
      taskQueue,
    );
    const orderId = await createOrder(database.db);
    postmark.queueFault(orderId, { kind: 'accept-then-drop' });
    const run = runMail(orderId, taskQueue);
    await waitFor('the unknown send to be dispatched and answered', async () =>
      sends(postmark, orderId).length > 0 ? true : undefined,
    );
    // The send's unknown is in; the workflow waits its settle delay. The operator reorders the providers.
    await first.stop();
    await worker(
      'assume-failed',
      [
        ['mailgun', mailgun],
        ['postmark', postmark],
      ],
      taskQueue,
    );
    const result = await run;

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(postmark.messagesFor(orderId)).toHaveLength(1);
    expect(sends(mailgun, orderId)).toHaveLength(0);
    expect(mailgun.lookups().filter((lookup) => lookup.orderId === orderId)).toHaveLength(0);
    const { rows } = await database.db.query<{ verification: string; provider: string }>(
      `SELECT verification, provider FROM order_mail_log WHERE order_id = $1`,
      [orderId],
    );
    expect(rows[0]).toEqual({ verification: 'lookup', provider: 'postmark' });
  }, 40_000);
});
