// Failover (docs/design.md, "Failover"): postmark first, mailgun second, each its own sandbox over loopback (real
// HTTP, real Postgres, a real Temporal dev server). An attempt moves to mailgun only when its postmark attempt is
// known not to have been sent; an unknown that could not be verified stays with postmark under both policies;
// and verification asks the provider the attempt went to, whatever the worker's list says by then. Assertions
// are on each sandbox's received messages and requests, and on the row and its attempts.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
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
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import { testVerifier, untilAttemptEnded } from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
/** A "not found" waits for a witness that leaves only after the attempt's 8 s send timeout: a longer deadline. */
const WAITS_FOR_WITNESS: VerificationSettings = { ...VERIFY, deadlineMs: 30_000 };

// The file's six tests at once, not vitest's default of 5 (below: what keeps them apart).
vi.setConfig({ maxConcurrency: 8 });

let database: TestDatabase;
/** The refused-connections test's own: it reads postmark's shared health, which any accepted send resets. */
let downDatabase: TestDatabase;
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
  db = database.db,
): Omit<ActivityDependencies, 'workerIdentity' | 'mailIdentity'> {
  const transports = list.map(([provider, on]) => testProviderMailClient(provider, on.url));
  const verifiers = list.map(([provider, on]) => testVerifier(provider, on.url, { settings: verify }));
  stops.push(
    ...transports.map((transport) => () => transport.close()),
    ...verifiers.map((verifier) => () => verifier.close()),
  );
  const settings = testSettings({ unknownOutcomePolicy: policy, verification: verify });
  return {
    db,
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
  db = database.db,
): Promise<RunningTestWorker> {
  const running = await startTestWorker(
    providerParts(policy, list, verify, db),
    taskQueue === undefined ? {} : { taskQueue },
  );
  stops.push(() => running.stop());
  return running;
}

const workers = new Map<string, RunningTestWorker>();

beforeAll(async () => {
  [database, downDatabase] = await allStarted([
    openTestDatabase('failover'),
    openTestDatabase('failover_down'),
  ]);
  postmark = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  mailgun = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  down = await startMailSandbox();
  await down.close();
  client = await connectTestClient();
  const both: [MailProviderName, MailSandbox][] = [
    ['postmark', postmark],
    ['mailgun', mailgun],
  ];
  // Side by side: each worker has its own queue.
  const [assumeSent, assumeFailed, witness, downFirst] = await allStarted([
    worker('assume-sent', both),
    worker('assume-failed', both),
    worker('assume-sent', both, undefined, WAITS_FOR_WITNESS),
    worker(
      'assume-sent',
      [
        ['postmark', down],
        ['mailgun', mailgun],
      ],
      undefined,
      VERIFY,
      downDatabase.db,
    ),
  ]);
  workers.set('assume-sent', assumeSent);
  workers.set('assume-failed', assumeFailed);
  workers.set('witness', witness);
  workers.set('down', downFirst);
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await client?.connection.close();
  await mailgun?.close();
  await postmark?.close();
  await downDatabase?.close();
  await database?.close();
});

function runMail(orderId: string, taskQueue: string) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

function sends(on: MailSandbox, orderId: string) {
  return on.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

async function attemptProviders(orderId: string, db = database.db) {
  const { rows } = await db.query<{
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

// The tests run side by side: each has its own order (the sandboxes hold faults by order) and its own worker,
// and the one that reads postmark's health its own database.
describe.concurrent('an attempt known not sent at the primary moves to the second', () => {
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
    const orderId = await createOrder(downDatabase.db);
    const result = await runMail(orderId, workers.get('down')!.taskQueue);

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(mailgun.messagesFor(orderId)).toHaveLength(1);
    expect(
      (await attemptProviders(orderId, downDatabase.db)).map((row) => [row.provider, row.outcome]),
    ).toEqual([
      ['postmark', 'not_sent'],
      ['mailgun', 'accepted'],
    ]);
    // The failure was counted for the shared health (after the send reported, not before): new attempts
    // would skip postmark past the threshold.
    await waitFor('the refused send to be counted against postmark', async () => {
      const { rows } = await downDatabase.db.query<{ failures: number }>(
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

describe.concurrent('an unknown at the primary that could not be verified never moves', () => {
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

describe.concurrent('verification asks the attempt’s own provider', () => {
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
