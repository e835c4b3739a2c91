// A lookup that shows sends out of order (docs/providers.md, "What a witness assumes, per provider"): the
// sandbox's index shows every send it took without answering (accept-then-drop: the worker's unknown) only some
// seconds after it took it, and every later send, a customer's or a witness probe, at once. While the window's
// unknowns wait for a witness, a later send is listed before the unknown's own message. The witness rule must not
// read that as "not found": each case within what its provider promises ends with every customer mailed once.
// Under the rule before it ("a witness dispatched at or after the attempt"), a send that left while the unknown
// was still on the wire, shown first, made "not found" count and sent a second mail. Real Temporal dev server,
// real Postgres, the sandbox's provider emulations over loopback, assume-failed (a wrong "not found", or an
// undecided unknown, costs a second mail).
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { ReorderWatermark } from '../../packages/sandbox/src/lookupReorder';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import { noOrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { createWitnessProber } from '../../src/verification/witnessProbe';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';
import { testVerifier } from '../support/verificationKit';

const SETTLE_MS = 1_500;
// Room for every unknown to be answered by the lookup, the longest hold included; past it assume-failed would
// send a second mail, and the test would count it.
const VERIFY: VerificationSettings = { settleDelayMs: SETTLE_MS, lookupTimeoutMs: 800, deadlineMs: 40_000 };
const SETTINGS = testSettings({ unknownOutcomePolicy: 'assume-failed', verification: VERIFY });
const SEND_TIMEOUT_MS = SETTINGS.sendTimeoutMs;
const INDEXING_LAG_MS = 300;
// Orders started one every STAGGER_MS, every other one's request taken and its answer dropped: the plain ones
// are accepted while the unknowns before them are still within their send timeout, and shown at once.
const ORDERS = 16;
const STAGGER_MS = 500;

let database: TestDatabase;
let client: Client;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await openTestDatabase('lookup_reorder');
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await database?.close();
});

/**
 * A sandbox and a worker of the case's own, so the cases run side by side: the reorder is the whole sandbox's,
 * and a witness (a probe included) is one of the same destination.
 */
async function openCase(provider: MailProviderName) {
  const sandbox = await startMailSandbox({ lookups: { indexingLagMs: INDEXING_LAG_MS } });
  stops.push(() => sandbox.close());
  const mail = testProviderMailClient(provider, sandbox.url);
  const verifier = testVerifier(provider, sandbox.url, { settings: VERIFY });
  // Probes for the window's last unknowns, which no customer's send follows.
  const prober = createWitnessProber({
    db: database.db,
    settings: { sinkAddress: 'witness-sink@example.com', intervalMs: 1_000 },
    transports: [mail],
    identityOf: () => ({ from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' }),
    deploymentId: 'default',
    workerIdentity: `reorder-${provider}`,
    metrics: noOrderMailMetrics,
  });
  const worker = await startTestWorker({
    db: database.db,
    mail,
    settings: SETTINGS,
    verifier: verifier.verifier,
    witnessProber: prober,
  });
  stops.push(
    () => worker.stop(),
    () => prober.settled(),
    () => verifier.close(),
    () => mail.close(),
  );
  return { sandbox, taskQueue: worker.taskQueue };
}
type Case = Awaited<ReturnType<typeof openCase>>;

/**
 * Starts ORDERS orders, staggered, every other one's first request taken and its answer dropped (or every one's,
 * with `allUnknown`), and waits for every workflow to complete (every order terminal, or it throws).
 */
async function runWindow({ sandbox, taskQueue }: Case, allUnknown = false) {
  const orders: { orderId: string; unknown: boolean }[] = [];
  const runs: Promise<unknown>[] = [];
  for (let i = 0; i < ORDERS; i++) {
    const orderId = await createOrder(database.db);
    const unknown = allUnknown || i % 2 === 0;
    if (unknown) sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    orders.push({ orderId, unknown });
    runs.push(
      client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
    );
    await new Promise((resolve) => setTimeout(resolve, STAGGER_MS));
  }
  await Promise.all(runs);
  return orders;
}

/** The facts every case must end with: one mail per customer, every row settled `sent`, none `sending`. */
async function expectOneMailEach({ sandbox }: Case, orders: { orderId: string }[]) {
  const mails = orders.map(({ orderId }) => sandbox.messagesFor(orderId).length);
  expect(
    mails.filter((count) => count > 1),
    'customers with two mails',
  ).toHaveLength(0);
  expect(
    mails.filter((count) => count === 0),
    'customers without a mail',
  ).toHaveLength(0);
  const { rows } = await database.db.query<{ state: string; count: number }>(
    `SELECT state, count(*)::int AS count FROM order_mail_log WHERE order_id = ANY($1::bigint[]) GROUP BY state`,
    [orders.map(({ orderId }) => orderId)],
  );
  expect(rows).toEqual([{ state: 'sent', count: orders.length }]);
}

/** How the unknowns' attempts were settled: by the lookup (found) or otherwise. */
async function unknownsFoundByLookup(orders: { orderId: string; unknown: boolean }[]): Promise<number> {
  const { rows } = await database.db.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM order_mail_attempts
      WHERE order_id = ANY($1::bigint[]) AND attempt = 1 AND outcome = 'accepted' AND verification = 'lookup'`,
    [orders.filter((order) => order.unknown).map(({ orderId }) => orderId)],
  );
  return rows[0]!.count;
}

function lookupsOutOfOrder({ sandbox }: Case): number {
  return sandbox.lookups().filter((lookup) => lookup.reorder?.outOfOrder === true).length;
}

// Each provider within what it promises: read in the order taken (Postmark; a generic answer without a
// watermark), a send hidden for less than the send timeout the witness rule waits after an attempt's dispatch;
// the generic gateway with an honest watermark, hidden for longer than that; Mailgun up to its threshold.
const CASES: { provider: MailProviderName; watermark: ReorderWatermark; holdMs: number; why: string }[] = [
  {
    provider: 'generic',
    watermark: 'absent',
    holdMs: 5_000,
    why: 'no watermark, held under the send timeout',
  },
  { provider: 'postmark', watermark: 'absent', holdMs: 5_000, why: 'held under the send timeout' },
  {
    provider: 'generic',
    watermark: 'honest',
    holdMs: 12_000,
    why: 'an honest watermark, held past the send timeout',
  },
  // Mailgun's answers carry no watermark; its witness must be a settle delay old (its threshold).
  { provider: 'mailgun', watermark: 'absent', holdMs: SETTLE_MS, why: 'held up to its threshold' },
];

describe.concurrent.each(CASES)('$provider, $why', ({ provider, watermark, holdMs }) => {
  it('later sends shown before the unknowns: 0 customers with two mails, every order terminal', async () => {
    if (watermark === 'absent' && provider !== 'mailgun') expect(holdMs).toBeLessThan(SEND_TIMEOUT_MS);
    const bed = await openCase(provider);
    bed.sandbox.setLookupReorder({ holdMs, share: 0, watermark });
    const orders = await runWindow(bed);
    await expectOneMailEach(bed, orders);
    // The case happened: lookups listed a later send while an unknown's message was hidden, and the unknowns'
    // own sends were found by the lookup, not settled by the policy.
    if (holdMs > SETTLE_MS) expect(lookupsOutOfOrder(bed)).toBeGreaterThan(0);
    expect(await unknownsFoundByLookup(orders)).toBe(orders.filter((order) => order.unknown).length);
  }, 180_000);
});

it.concurrent(
  'the lagging lookup (2x the settle delay) with the reorder live, every send taken and its answer dropped: 0 with two',
  async () => {
    const bed = await openCase('generic');
    bed.sandbox.configureLookups({ indexingLagMs: 2 * SETTLE_MS });
    bed.sandbox.setLookupReorder({ holdMs: 5_000, share: 0.5, watermark: 'absent', seed: 7 });
    const orders = await runWindow(bed, true);
    await expectOneMailEach(bed, orders);
    expect(await unknownsFoundByLookup(orders)).toBe(ORDERS);
  },
  180_000,
);
