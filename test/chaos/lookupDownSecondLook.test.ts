// The lookup-down profile, short (docs/demo-and-chaos.md, "The lookup stays down"): the provider drops the
// first request of most orders and takes the first request of the rest without answering, while its lookup
// answers 503 past the verification deadline, so assume-sent settles every one of them sent/unknown. Then the
// lookup comes back: the sweep's second look, run by two workers at once, mails the orders whose request never
// arrived and leaves the others. Every customer ends with exactly one mail. Real Temporal dev server, real
// Postgres, two workers on one task queue, the sandbox's generic provider over loopback.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createActivities } from '../../src/activities';
import { createSweepActivities, type SweepSettings } from '../../src/activities/sweepActivities';
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
import { testVerifier, untilAttemptEnded } from '../support/verificationKit';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 3_000 };
const SETTINGS: SweepSettings = {
  graceMs: 60_000,
  lookbackMs: 24 * 3_600_000,
  confirmedSince: null,
  batchSize: 20,
};
// CI's short profile: 20 orders. LOOKUP_DOWN_ORDERS=200 is the full one (docs/demo-and-chaos.md).
const ORDERS = Number(process.env.LOOKUP_DOWN_ORDERS ?? 20);
const DROPPED = Math.round(ORDERS * 0.7);
const TAKEN = ORDERS - DROPPED;

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await openTestDatabase('lookup_down');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

async function worker(taskQueue: string, name: string): Promise<void> {
  const mail = testProviderMailClient('generic', sandbox.url);
  const verifier = testVerifier('generic', sandbox.url, { settings: VERIFY });
  const deps = {
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent', verification: VERIFY }),
    verifier: verifier.verifier,
    workerIdentity: name,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const reconcile = { db: database.db, temporal: client, settings: SETTINGS };
  const running = await startTestWorker(deps, {
    taskQueue,
    reconcile,
    activities: { ...createActivities(deps), ...createSweepActivities(reconcile, deps) },
  });
  stops.push(
    () => running.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
}

function sweep(taskQueue: string) {
  return client.workflow.execute(reconcileOrderMails, {
    workflowId: `sweep-${randomUUID()}`,
    taskQueue,
    args: [{}],
  });
}

it(
  'the lookup stays down past the deadline, then comes back: the second look mails the dropped orders, none twice',
  async () => {
    const taskQueue = `lookup-down-${randomUUID()}`;
    await worker(taskQueue, 'worker-1');
    await worker(taskQueue, 'worker-2');

    const dropped: string[] = [];
    const taken: string[] = [];
    for (let i = 0; i < DROPPED + TAKEN; i++) {
      const orderId = await createOrder(database.db);
      const drop = i < DROPPED;
      sandbox.queueFault(orderId, { kind: drop ? 'drop-without-processing' : 'accept-then-drop' });
      (drop ? dropped : taken).push(orderId);
    }
    // The lookup is down for longer than the verification deadline: every unknown goes to the policy.
    sandbox.setLookupFaultPlan([{ fault: { kind: 'status', status: 503 }, probability: 1 }]);
    await Promise.all(
      [...dropped, ...taken].map((orderId) =>
        client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
      ),
    );
    const { rows: settled } = await database.db.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM order_mail_log
      WHERE state = 'sent' AND outcome = 'unknown' AND unknown_policy = 'assume-sent'
        AND verification = 'inconclusive'`,
    );
    expect(settled[0]!.count).toBe(DROPPED + TAKEN);

    // The lookup comes back; the next order's mail is the witness.
    sandbox.setLookupFaultPlan([]);
    for (const orderId of [...dropped, ...taken]) await untilAttemptEnded(database.db, orderId);
    const witness = await createOrder(database.db);
    await client.workflow.execute(orderConfirmationMail, { workflowId: witness, taskQueue, args: [witness] });
    await new Promise((resolve) => setTimeout(resolve, VERIFY.settleDelayMs + 300));

    // Two sweeps at once, then one at a time until every row was looked at (a sweep asks about 30 at most).
    await Promise.all([sweep(taskQueue), sweep(taskQueue)]);
    const started = Date.now();
    let sweeps = 2;
    for (;;) {
      const { rows } = await database.db.query<{ pending: number }>(
        `SELECT count(*)::int AS pending FROM order_mail_log WHERE order_id = ANY($1::bigint[]) AND second_look IS NULL`,
        [[...dropped, ...taken]],
      );
      if (rows[0]!.pending === 0 || sweeps >= 2 + Math.ceil(ORDERS / 30)) break;
      await sweep(taskQueue);
      sweeps += 1;
    }
    await waitFor(
      'every reopened order to be mailed',
      async () => {
        const { rows } = await database.db.query<{ open: number }>(
          `SELECT count(*)::int AS open FROM order_mail_log
          WHERE second_look = 'reopened' AND NOT (state = 'sent' AND outcome = 'accepted')`,
        );
        return rows[0]!.open === 0 ? true : undefined;
      },
      60_000,
    );
    await sweep(taskQueue);

    const { rows: looks } = await database.db.query<{ secondLook: string | null; count: number }>(
      `SELECT second_look AS "secondLook", count(*)::int AS count FROM order_mail_log
      WHERE order_id = ANY($1::bigint[]) GROUP BY second_look ORDER BY second_look`,
      [[...dropped, ...taken]],
    );
    expect(looks).toEqual([
      { secondLook: 'found', count: TAKEN },
      { secondLook: 'reopened', count: DROPPED },
    ]);
    const mails = [...dropped, ...taken].map((orderId) => sandbox.messagesFor(orderId).length);
    expect(mails.filter((count) => count === 0)).toHaveLength(0);
    expect(mails.filter((count) => count > 1)).toHaveLength(0);
    console.info(
      `lookup down: ${ORDERS} orders, ${DROPPED} reopened and mailed by the second look, ${TAKEN} found, ` +
        `${sweeps} sweeps, ${Math.round((Date.now() - started) / 1000)} s from the first sweep to the last mail`,
    );
  },
  150_000 + ORDERS * 1_000,
);
