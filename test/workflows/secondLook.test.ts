// The sweep's second look (docs/design.md, "The second look"): a mail the assume-sent policy recorded as sent
// while verification was inconclusive (the lookup could not show a witness in time) is asked about again by
// the sweep; a witnessed "not found" reopens the row once, by its one fenced statement, and the order's mail is
// sent; a found answer leaves it sent. Real Temporal dev server, real Postgres, the sandbox's generic provider
// and its lookup over loopback; assertions on rows, late answers and the messages the sandbox holds.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import { createActivities } from '../../src/activities';
import { createReconcileActivities, type ReconcileSettings } from '../../src/activities/reconcileActivities';
import { readMailLog } from '../../src/db/orderMailLog';
import { reopenAfterSecondLook } from '../../src/mailRow/statements';
import { noOrderMailMetrics, type OrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import { listOrderMails } from '../../src/ops/listOrderMails';
import type { OpsContext } from '../../src/ops/opsContext';
import { resolveOrderMail } from '../../src/ops/resolveOrderMail';
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
const SETTINGS: ReconcileSettings = {
  graceMs: 60_000,
  lookbackMs: 24 * 3_600_000,
  confirmedSince: null,
  batchSize: 20,
};
const LAGGING = 10 * 60_000;
const INDEXED = 300;

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];
/** The order the first test's second look reopened and mailed. */
let reopenedOrder = '';

beforeAll(async () => {
  database = await openTestDatabase('second_look');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: INDEXED } });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

/**
 * A worker that sends, verifies and sweeps, under assume-sent unless `policy` says otherwise; `retentionMs` is
 * its lookup's retention.
 */
async function sweepingWorker(
  options: {
    retentionMs?: number;
    provider?: 'generic' | 'postmark';
    policy?: 'assume-sent' | 'assume-failed';
    metrics?: OrderMailMetrics;
  } = {},
): Promise<string> {
  const provider = options.provider ?? 'generic';
  const mail = testProviderMailClient(provider, sandbox.url);
  const verifier = testVerifier(provider, sandbox.url, {
    settings: VERIFY,
    ...(options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs }),
  });
  const deps = {
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: options.policy ?? 'assume-sent', verification: VERIFY }),
    verifier: verifier.verifier,
    workerIdentity: 'second-look',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const reconcile = {
    db: database.db,
    temporal: client,
    settings: SETTINGS,
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  };
  const worker = await startTestWorker(deps, {
    reconcile,
    activities: { ...createActivities(deps), ...createReconcileActivities(reconcile, deps) },
  });
  stops.push(
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
  return worker.taskQueue;
}

/**
 * An order whose first request the provider `took` or not, while its lookup lags far behind (no witness can
 * show): verification is inconclusive by its deadline and assume-sent records it sent/unknown.
 */
async function assumedSentUnverified(taskQueue: string, took: boolean): Promise<string> {
  const orderId = await createOrder(database.db);
  sandbox.queueFault(orderId, { kind: took ? 'accept-then-drop' : 'drop-without-processing' });
  sandbox.configureLookups({ indexingLagMs: LAGGING });
  try {
    await client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
  } finally {
    sandbox.configureLookups({ indexingLagMs: INDEXED });
  }
  expect(await secondLookOf(orderId)).toMatchObject({
    state: 'sent',
    outcome: 'unknown',
    unknownPolicy: 'assume-sent',
    verification: 'inconclusive',
    secondLook: null,
  });
  return orderId;
}

/** A send to its 2xx after the order's attempt ended: the witness its "not found" needs; then indexed. */
async function witnessAfter(taskQueue: string, orderId: string): Promise<void> {
  await untilAttemptEnded(database.db, orderId);
  const witness = await createOrder(database.db);
  await client.workflow.execute(orderConfirmationMail, { workflowId: witness, taskQueue, args: [witness] });
  await new Promise((resolve) => setTimeout(resolve, VERIFY.settleDelayMs + INDEXED));
}

function sweep(taskQueue: string) {
  return client.workflow.execute(reconcileOrderMails, {
    workflowId: `sweep-${randomUUID()}`,
    taskQueue,
    args: [{}],
  });
}

async function secondLookOf(orderId: string) {
  const { rows } = await database.db.query<{
    state: string;
    outcome: string | null;
    unknownPolicy: string | null;
    verification: string | null;
    attempts: number;
    secondLook: string | null;
    secondLookAttempt: number | null;
  }>(
    `SELECT state, outcome, unknown_policy AS "unknownPolicy", verification, attempts,
            second_look AS "secondLook", second_look_attempt AS "secondLookAttempt"
       FROM order_mail_log WHERE order_id = $1`,
    [orderId],
  );
  return rows[0] ?? null;
}

async function lateAnswers(orderId: string) {
  const { rows } = await database.db.query<{ attempt: number; outcome: string }>(
    `SELECT attempt, outcome FROM order_mail_late_answers WHERE order_id = $1 ORDER BY attempt`,
    [orderId],
  );
  return rows;
}

async function mailedAgain(orderId: string): Promise<void> {
  await waitFor('the reopened order to be sent again', async () => {
    const row = await readMailLog(database.db, orderId);
    return row?.state === 'sent' && row.outcome === 'accepted' ? true : undefined;
  });
}

describe('the second look at a mail assume-sent recorded without evidence', () => {
  let taskQueue: string;
  beforeAll(async () => {
    taskQueue = await sweepingWorker();
  });

  it('never reached the provider: a later witnessed "not found" reopens it once and the customer gets one mail', async () => {
    const orderId = await assumedSentUnverified(taskQueue, false);
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    await witnessAfter(taskQueue, orderId);

    await sweep(taskQueue);
    await mailedAgain(orderId);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await secondLookOf(orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 2,
      secondLook: 'reopened',
      secondLookAttempt: 1,
    });
    // The late verification of the first attempt: not sent, by the lookup.
    expect(await lateAnswers(orderId)).toEqual([{ attempt: 1, outcome: 'not_sent' }]);

    // No third look: another sweep changes nothing and sends nothing.
    await sweep(taskQueue);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await secondLookOf(orderId)).toMatchObject({ attempts: 2, secondLook: 'reopened' });
    reopenedOrder = orderId;
  });

  it('ops: list shows pending and done second looks; resolve --as failed refuses a reopened row unless forced', async () => {
    const pending = await assumedSentUnverified(taskQueue, false);
    const ctx: OpsContext = {
      db: database.db,
      client,
      namespace: inject('temporalNamespace'),
      taskQueue,
      uiBaseUrl: 'http://ui.example',
      operator: 'alice',
    };
    const listed = await listOrderMails(ctx, { filter: 'second-look', since: null, limit: 1_000 });
    const byOrder = new Map(listed.map(({ row }) => [row.orderId, row.secondLook]));
    expect(byOrder.get(reopenedOrder)).toBe('reopened');
    expect(byOrder.has(pending) && byOrder.get(pending)).toBe(null);

    await expect(
      resolveOrderMail(ctx, { orderId: reopenedOrder, as: 'failed', reason: 'customer says none' }),
    ).rejects.toMatchObject({ code: 'SECOND_LOOK_RESENT' });
    expect(await secondLookOf(reopenedOrder)).toMatchObject({ state: 'sent', outcome: 'accepted' });

    const forced = await resolveOrderMail(ctx, {
      orderId: reopenedOrder,
      as: 'failed',
      reason: 'customer says none',
      force: true,
    });
    expect(forced.warning).toMatch(/^DUPLICATE/);
    expect(await secondLookOf(reopenedOrder)).toMatchObject({ state: 'failed', outcome: 'resolved' });
    // The pending one is reopened and mailed by the next sweep, as any other.
    await witnessAfter(taskQueue, pending);
    await sweep(taskQueue);
    await mailedAgain(pending);
  });

  it('two sweeps at once reopen it once; the fenced statement run twice changes one row', async () => {
    const orderId = await assumedSentUnverified(taskQueue, false);
    const other = await assumedSentUnverified(taskQueue, false);
    await witnessAfter(taskQueue, other);

    // The named transition itself, twice at once, for `other`.
    const row = (await readMailLog(database.db, other))!;
    const seen = { orderId: other, claimToken: row.claimToken, attempts: row.attempts };
    const input = { boundMs: 3_600_000, note: 'test: reopened twice at once', recordedBy: 'test' };
    const changed = await Promise.all([
      reopenAfterSecondLook(database.db, seen, input),
      reopenAfterSecondLook(database.db, seen, input),
    ]);
    expect(changed.filter(Boolean)).toHaveLength(1);

    await Promise.all([sweep(taskQueue), sweep(taskQueue)]);
    await mailedAgain(orderId);
    await mailedAgain(other);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(sandbox.messagesFor(other)).toHaveLength(1);
    expect(await secondLookOf(orderId)).toMatchObject({ attempts: 2, secondLook: 'reopened' });
    expect(await lateAnswers(orderId)).toEqual([{ attempt: 1, outcome: 'not_sent' }]);
  });

  it('the provider had it: found, the row stays sent and the look is recorded done', async () => {
    const orderId = await assumedSentUnverified(taskQueue, true);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, VERIFY.settleDelayMs + INDEXED));

    await sweep(taskQueue);
    expect(await secondLookOf(orderId)).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      attempts: 1,
      secondLook: 'found',
    });
    expect(await lateAnswers(orderId)).toEqual([{ attempt: 1, outcome: 'accepted' }]);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('never for a row without a recorded destination, nor for a row of the case study’s writer', async () => {
    const bare = await assumedSentUnverified(taskQueue, false);
    const legacy = await assumedSentUnverified(taskQueue, false);
    await database.db.query(`UPDATE order_mail_log SET dispatch_provider = NULL WHERE order_id = $1`, [bare]);
    await database.db.query(
      `UPDATE order_mail_log SET claim_token = 'legacy:' || gen_random_uuid() WHERE order_id = $1`,
      [legacy],
    );
    await witnessAfter(taskQueue, legacy);

    await sweep(taskQueue);
    for (const orderId of [bare, legacy]) {
      expect(await secondLookOf(orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        secondLook: null,
      });
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    }
  });
});

describe('a lookup that forgets at its retention', () => {
  it('no second look past dispatch + retention / 2', async () => {
    // Retention 20 s: the window closes 10 s after the dispatch; the sweep comes after that, on Postgres's clock.
    const taskQueue = await sweepingWorker({ retentionMs: 20_000 });
    sandbox.configureLookups({ retentionMs: 20_000 });
    try {
      const orderId = await assumedSentUnverified(taskQueue, false);
      await witnessAfter(taskQueue, orderId);
      await waitFor('the window to close: dispatch + retention / 2', async () => {
        const { rows } = await database.db.query<{ closed: boolean }>(
          `SELECT now() > dispatched_at + interval '10 seconds' AS closed FROM order_mail_log WHERE order_id = $1`,
          [orderId],
        );
        return rows[0]?.closed === true ? true : undefined;
      });
      await sweep(taskQueue);
      expect(await secondLookOf(orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        secondLook: null,
      });
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    } finally {
      sandbox.configureLookups({ retentionMs: 7 * 24 * 3_600_000 });
    }
  });
});

describe('under assume-failed, the dual', () => {
  it('a re-sent attempt whose first request the lookup later shows is counted once as the policy’s duplicate', async () => {
    const duplicates: string[] = [];
    const metrics: OrderMailMetrics = {
      ...noOrderMailMetrics,
      policyDuplicateShown: (provider) => duplicates.push(provider),
    };
    const taskQueue = await sweepingWorker({ provider: 'postmark', policy: 'assume-failed', metrics });
    const orderId = await createOrder(database.db);
    // The provider takes the first request and the answer is lost; the lookup lags past the deadline, so the
    // policy re-sends (Postmark has no idempotency key): two mails.
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    sandbox.configureLookups({ indexingLagMs: LAGGING });
    try {
      await client.workflow.execute(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue,
        args: [orderId],
      });
    } finally {
      sandbox.configureLookups({ indexingLagMs: INDEXED });
    }
    expect(sandbox.messagesFor(orderId)).toHaveLength(2);
    expect(await secondLookOf(orderId)).toMatchObject({ state: 'sent', outcome: 'accepted', attempts: 2 });
    // Until the lookup can be trusted to show every message of the key: the re-send's end and settle delay.
    await untilAttemptEnded(database.db, orderId);
    await new Promise((resolve) => setTimeout(resolve, VERIFY.settleDelayMs + INDEXED));

    await Promise.all([sweep(taskQueue), sweep(taskQueue)]);
    await sweep(taskQueue);
    expect(await lateAnswers(orderId)).toEqual([{ attempt: 1, outcome: 'accepted' }]);
    expect(duplicates).toEqual(['postmark']);
  });
});
