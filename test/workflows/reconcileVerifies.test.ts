// The reconciliation sweep asks the provider (docs/design.md §7): a run terminated between its dispatch and
// its record leaves the row 'sending', and no run follows it. Settled by the policy, assume-sent recorded a
// mail the provider had dropped as sent (the customer has none, and nothing says so); now the sweep looks the
// request up first, once it is older than the settle delay. Real Temporal dev server, real Postgres, the
// sandbox's generic provider with its lookup over loopback; assertions on the rows, the attempts, the
// sweep's report and the messages the sandbox holds.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createActivities } from '../../src/activities';
import { createSweepActivities, type SweepSettings } from '../../src/activities/sweepActivities';
import { readMailLog } from '../../src/db/orderMailLog';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
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
import {
  attemptsWithVerification,
  holdingFirstSend,
  rowWithVerification,
  testVerifier,
  untilAttemptEnded,
} from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
// The sweep asks about an orphan's request only once its send may be over and the provider's log trusted.
const SEND_TIMEOUT_MS = testSettings().sendTimeoutMs;
const SETTINGS: SweepSettings = {
  graceMs: 60_000,
  lookbackMs: 24 * 3_600_000,
  confirmedSince: null,
  batchSize: 20,
};

let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];
/** Orders whose first send is held after the real send returned: dispatched, never recorded. */
const heldOrders = new Set<string>();

beforeAll(async () => {
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
});

/**
 * A database of its own and a worker with verification and the sweep on it, for each test: a sweep reads
 * every row, so each test's sweep sees only its own orphans, and the tests run side by side.
 */
async function openBed(verification: VerificationSettings = VERIFY): Promise<Bed> {
  const database = await openTestDatabase('reconcile_verify');
  stops.push(() => database.close());
  return { database, taskQueue: await verifyingSweepWorker(database, verification) };
}

interface Bed {
  database: TestDatabase;
  taskQueue: string;
}

async function verifyingSweepWorker(
  database: TestDatabase,
  verification: VerificationSettings,
): Promise<string> {
  const mail = testProviderMailClient('generic', sandbox.url);
  const verifier = testVerifier('generic', sandbox.url, { settings: verification });
  const deps = {
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent', verification }),
    verifier: verifier.verifier,
    workerIdentity: 'sweep-verify',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const real = createActivities(deps);
  const reconcile = { db: database.db, temporal: client, settings: SETTINGS };
  const worker = await startTestWorker(deps, {
    reconcile,
    activities: {
      ...real,
      ...createSweepActivities(reconcile, deps),
      // The run is terminated before it could record its send.
      sendOrderMail: holdingFirstSend(real.sendOrderMail, (orderId) => heldOrders.has(orderId)),
    },
  });
  stops.push(
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
  return worker.taskQueue;
}

/** A run terminated after its send went out and before it recorded it; the row is quiet past the grace. */
async function terminatedMidSend({ database, taskQueue }: Bed, orderId: string): Promise<void> {
  heldOrders.add(orderId);
  await client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
  await waitFor('the send to have gone out and been held', async () =>
    sandbox.requests().some((request) => request.orderId === orderId) &&
    (await readMailLog(database.db, orderId))?.dispatchedAt
      ? true
      : undefined,
  );
  await client.workflow.getHandle(orderId).terminate('test: terminated mid-send');
  await database.db.query(
    `UPDATE order_mail_log SET updated_at = now() - interval '1 hour' WHERE order_id = $1`,
    [orderId],
  );
}

/**
 * Another order sent to its 2xx after the terminated run's request had ended (its dispatch plus its send
 * timeout, on Postgres's clock): the freshness witness the lookup must show before its "not found" counts
 * (src/evidence/freshnessCheck.ts).
 */
async function sendWitness({ database, taskQueue }: Bed, after: string): Promise<void> {
  await untilAttemptEnded(database.db, after);
  const orderId = await createOrder(database.db);
  await client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

/**
 * Until the sweep may ask about these orders' requests: each dispatched a send timeout and a settle delay ago on
 * Postgres's clock, the clock and the figures the sweep itself reads (src/activities/findOrphans.ts).
 */
async function untilSweepMayAsk({ database }: Bed, orderIds: string[]): Promise<void> {
  await waitFor(
    'the requests to be older than the send timeout and the settle delay',
    async () => {
      const { rows } = await database.db.query<{ ready: boolean }>(
        `SELECT bool_and(now() - dispatched_at >=
                  (coalesce(dispatch_send_timeout_ms, $2) + $3) * interval '1 millisecond') AS ready
           FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
        [orderIds, SEND_TIMEOUT_MS, VERIFY.settleDelayMs + 300],
      );
      return rows[0]?.ready === true ? true : undefined;
    },
    SEND_TIMEOUT_MS + VERIFY.settleDelayMs + 20_000,
  );
}

function sweep({ taskQueue }: Bed) {
  return client.workflow.execute(reconcileOrderMails, {
    workflowId: `sweep-${randomUUID()}`,
    taskQueue,
    args: [{}],
  });
}

describe.concurrent('the sweep asks the provider about a terminated run’s dispatched request', () => {
  it('dropped by the provider: recorded failed/not_sent, verified, for a retry to send (not sent/unknown)', async () => {
    const bed = await openBed();
    const { database } = bed;
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    await terminatedMidSend(bed, orderId);
    await sendWitness(bed, orderId);
    await untilSweepMayAsk(bed, [orderId]);

    const report = await sweep(bed);
    expect(report.stuck).toEqual([
      expect.objectContaining({ orderId, settlement: 'settled', settledAs: 'verified-not-sent' }),
    ]);
    expect(await rowWithVerification(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      verification: 'lookup',
    });
    const attempts = await attemptsWithVerification(database.db, orderId);
    expect(attempts).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null, verification: 'lookup' },
    ]);
    expect(attempts[0]!.error).toMatch(/terminated .*verified not sent/);
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
  });

  it('taken by the provider: recorded sent/accepted with its message id', async () => {
    const bed = await openBed();
    const { database } = bed;
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    await terminatedMidSend(bed, orderId);
    await untilSweepMayAsk(bed, [orderId]);

    const report = await sweep(bed);
    sandbox.releaseHeld();
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(report.stuck).toEqual([
      expect.objectContaining({ orderId, settlement: 'settled', settledAs: 'verified-accepted' }),
    ]);
    expect(await rowWithVerification(database.db, orderId)).toEqual({
      state: 'sent',
      outcome: 'accepted',
      verification: 'lookup',
      providerMessageId: messages[0]!.id,
    });
  });
});

describe.concurrent('many closed runs’ requests at once', () => {
  it('one sweep asks about ten, together; the rest wait for the next sweep, which settles them', async () => {
    const bed = await openBed();
    const { database } = bed;
    const orderIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
      await terminatedMidSend(bed, orderId);
      orderIds.push(orderId);
    }
    // The last one dispatched ends last.
    await sendWitness(bed, orderIds[orderIds.length - 1]!);
    await untilSweepMayAsk(bed, orderIds);

    const first = await sweep(bed);
    expect(first.stuck).toHaveLength(10);
    expect(first.stuck.every((claim) => claim.settledAs === 'verified-not-sent')).toBe(true);
    expect(first.leftForLater).toBe(2);
    const second = await sweep(bed);
    expect(second.stuck.map((claim) => claim.settledAs)).toEqual(['verified-not-sent', 'verified-not-sent']);
    expect(second.leftForLater).toBe(0);
    for (const orderId of orderIds) {
      expect(await rowWithVerification(database.db, orderId)).toMatchObject({
        state: 'failed',
        outcome: 'not_sent',
        verification: 'lookup',
      });
    }
  });
});

describe.concurrent('a request younger than the settle delay', () => {
  it('is left for a later sweep, not settled by the policy now', async () => {
    const bed = await openBed({ ...VERIFY, settleDelayMs: 600_000 });
    const { database } = bed;
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    await terminatedMidSend(bed, orderId);
    const before = await readMailLog(database.db, orderId);

    const report = await sweep(bed);
    expect(report.stuck.map((claim) => claim.orderId)).not.toContain(orderId);
    expect(await readMailLog(database.db, orderId)).toEqual(before);
  });
});
