// Issue 22, the freshness witness: a lookup slower than its settle delay makes "not found" untrue, and without
// the witness the workflow records "verified not sent" and sends a second mail. Here the sandbox's lookup lags
// twice the settle delay, every send is accepted and its answer dropped, and the workflow must still give each
// customer one mail; the attempts say why they waited. With a witness (a send that got its 2xx after ours, shown
// by the same lookup) a true "not found" still counts. Real HTTP over loopback, Postgres and Temporal.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
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
  type TestDatabase,
} from '../support/testKit';
import { attemptsWithVerification, testVerifier, untilAttemptEnded } from '../support/verificationKit';

// Seconds, not milliseconds: with a 700 ms settle delay a CI machine under load once made its first lookup after
// the 1.4 s lag had passed, found the send without waiting, and the test failed for want of the case it is about.
// At 3 s the first lookup must be 3 s late to miss the lag.
const SETTLE_MS = 3_000;
// Twice the settle delay: every lookup made at the settle delay is behind.
const LAG_MS = 2 * SETTLE_MS;
// Room to wait out the lag several times over; past it, assume-failed would send a second mail.
const VERIFY: VerificationSettings = { settleDelayMs: SETTLE_MS, lookupTimeoutMs: 800, deadlineMs: 25_000 };
const PROVIDERS = ['generic', 'postmark', 'mailgun'] as const;
const ORDERS_PER_PROVIDER = 4;
// All six tests at once, not vitest's default of 5: the lag tests waiting their turn (oneLagTestAtATime) held
// places of the five, and the last witness test waited for one (issue 38).
vi.setConfig({ maxConcurrency: 6 });

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];
const queues = new Map<MailProviderName, string>();

beforeAll(async () => {
  database = await openTestDatabase('freshness_witness');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: LAG_MS } });
  client = await connectTestClient();
  // Side by side (issue 38); each part's close is pushed as it starts, so afterAll stops it when another failed.
  await allStarted(
    PROVIDERS.map(async (provider) => {
      const mail = testProviderMailClient(provider, sandbox.url);
      stops.push(() => mail.close());
      const verifier = testVerifier(provider, sandbox.url, { settings: VERIFY });
      stops.push(() => verifier.close());
      // assume-failed: where verification cannot decide, the policy sends again. The harsher policy for this test.
      const worker = await startTestWorker({
        db: database.db,
        mail,
        settings: testSettings({ unknownOutcomePolicy: 'assume-failed', verification: VERIFY }),
        verifier: verifier.verifier,
      });
      stops.push(() => worker.stop());
      queues.set(provider, worker.taskQueue);
    }),
  );
}, 180_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

function runMail(orderId: string, provider: MailProviderName) {
  return client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: queues.get(provider)!,
    args: [orderId],
  });
}

/**
 * Runs the lag tests one at a time: each needs its first lookup within the lag, which twelve runs at once on a
 * loaded machine can miss. The witness tests run beside them.
 */
let lagTestsDone: Promise<unknown> = Promise.resolve();
function oneLagTestAtATime(test: () => Promise<void>): Promise<void> {
  const turn = lagTestsDone.then(test);
  lagTestsDone = turn.catch(() => undefined);
  return turn;
}

// Side by side: each provider is its own destination, and within one a later send shown by the lookup is
// shown after this test's own accepted ones (the lag is the same for all), so no test's send misleads another.
describe.concurrent.each(PROVIDERS)('%s: a lookup that lags 2x the settle delay', (provider) => {
  it('accepted-then-dropped sends: 0 customers with two mails, and the attempts say why they waited', () =>
    oneLagTestAtATime(async () => {
      const orderIds: string[] = [];
      for (let i = 0; i < ORDERS_PER_PROVIDER; i++) {
        const orderId = await createOrder(database.db);
        sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
        orderIds.push(orderId);
      }
      await Promise.all(orderIds.map((orderId) => runMail(orderId, provider)));

      const twice = orderIds.filter((orderId) => sandbox.messagesFor(orderId).length > 1);
      expect(twice).toEqual([]);
      for (const orderId of orderIds) {
        expect(sandbox.messagesFor(orderId)).toHaveLength(1);
        const attempts = await attemptsWithVerification(database.db, orderId);
        expect(attempts).toMatchObject([
          { attempt: 1, state: 'sent', outcome: 'accepted', verification: 'lookup' },
        ]);
        // Its first "not found" came before the lookup had caught up: it waited, and the row says why.
        expect(attempts[0]!.error).toMatch(/having waited because the lookup found nothing, but /);
      }
    }));

  it('a true "not found" still counts once the lookup shows a later send that got its 2xx (the witness)', async () => {
    const lost = await createOrder(database.db);
    sandbox.queueFault(lost, { kind: 'drop-without-processing' });
    const lostRun = runMail(lost, provider);
    // The witness is dispatched after the lost attempt has ended (its dispatch plus its send timeout), and gets
    // its 2xx.
    await waitFor('the lost request to reach the sandbox', async () =>
      sandbox.requests().some((request) => request.orderId === lost) ? true : undefined,
    );
    await untilAttemptEnded(database.db, lost);
    const witness = await createOrder(database.db);
    await runMail(witness, provider);
    await lostRun;

    expect(sandbox.messagesFor(lost)).toHaveLength(1);
    const attempts = await attemptsWithVerification(database.db, lost);
    expect(attempts).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
      { attempt: 2, state: 'sent', outcome: 'accepted', verification: null },
    ]);
  });
});
