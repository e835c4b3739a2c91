// Adopting the case study's own order_mail_log (docs/adoption.md). The shop's table is made with the case
// study's DDL and filled by the case study's own statements: orders sent, failed (a 4xx) and left 'sending'
// (no claim token, no dispatch fence: the old worker died, or got a 5xx). Then the migration adopts it, and
// real workflows run on every order: no row is lost or changes its meaning, an old sent order sends nothing,
// an old failed one sends once, and an old 'sending' one is settled by the policy, never sent as "not
// dispatched".
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SweepSettings } from '../../src/activities/sweepActivities';
import {
  AdoptionRequiredError,
  CASE_STUDY_TABLE_KEPT_AS,
  migrate,
  UnknownMailLogTableError,
} from '../../src/db/migrator';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  connectTestClient,
  createOrder,
  startTestWorker,
  testMailClient,
  testSettings,
  type RunningTestWorker,
} from '../support/testKit';
import {
  openCaseStudyDatabase,
  openOutsideWriter,
  type CaseStudyDatabase,
  type OutsideWriter,
} from './caseStudyKit';

// The sweep settles an old 'sending' row once it has been quiet this long; the test's rows are an hour old.
const reconcileSettings: SweepSettings = {
  graceMs: 60_000,
  lookbackMs: 24 * 3_600_000,
  confirmedSince: null,
  batchSize: 100,
};

let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
});
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await client?.connection.close();
  await mail?.close();
  await sandbox?.close();
});

interface Shop {
  database: CaseStudyDatabase;
  orders: { sent: string[]; failed: string[]; sending: string[]; none: string[] };
}

/**
 * The shop before adoption: two orders in each state, each written by the case study's own statements (the
 * failed ones after a 4xx and a second run, as its queue does), an hour old, and one order with no row.
 */
async function shopBeforeAdoption(prefix: string): Promise<Shop> {
  const database = await openCaseStudyDatabase(prefix);
  cleanups.push(() => database.close());
  const oldSystem: OutsideWriter = await openOutsideWriter(database.caseStudyConnectionString);
  try {
    const orders: Shop['orders'] = { sent: [], failed: [], sending: [], none: [] };
    for (let i = 0; i < 2; i++) {
      const sent = await createOrder(database.db);
      await oldSystem.claim(sent);
      await oldSystem.record(sent, 'sent');
      orders.sent.push(sent);
      const failed = await createOrder(database.db);
      for (let run = 0; run < 2; run++) {
        await oldSystem.claim(failed);
        await oldSystem.record(failed, 'failed');
      }
      orders.failed.push(failed);
      const sending = await createOrder(database.db);
      await oldSystem.claim(sending);
      orders.sending.push(sending);
    }
    orders.none.push(await createOrder(database.db));
    await database.db.query(`UPDATE order_mail_log SET updated_at = now() - interval '1 hour'`);
    return { database, orders };
  } finally {
    await oldSystem.close();
  }
}

async function caseStudyRows(shop: Shop, table: string) {
  const { rows } = await shop.database.db.query<{ orderId: string; state: string; attempts: number }>(
    `SELECT order_id::text AS "orderId", state, attempts FROM ${table} ORDER BY order_id`,
  );
  return rows;
}

async function worker(shop: Shop, policy: UnknownOutcomePolicy): Promise<RunningTestWorker> {
  const running = await startTestWorker(
    { db: shop.database.db, mail, settings: testSettings({ unknownOutcomePolicy: policy }) },
    { reconcile: { db: shop.database.db, temporal: client, settings: reconcileSettings } },
  );
  cleanups.push(() => running.stop());
  return running;
}

async function mailOf(orderId: string, taskQueue: string) {
  return client.workflow
    .execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] })
    .then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    );
}

async function sweep(taskQueue: string) {
  return client.workflow.execute(reconcileOrderMails, {
    workflowId: `adoption-sweep-${randomUUID()}`,
    taskQueue,
    args: [{}],
  });
}

async function resetAndWait(orderId: string) {
  const { runId } = await client.workflow.getHandle(orderId).describe();
  await resetToFirstWorkflowTask(client, {
    workflowId: orderId,
    runId,
    reason: 'test: send again after adoption',
    identity: 'adoption test',
  });
  return client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
}

describe('adopting the case study order_mail_log', () => {
  it('is refused without --adopt, and an unknown shape is refused either way; nothing changes', async () => {
    const shop = await shopBeforeAdoption('adopt_refused');
    const before = await caseStudyRows(shop, 'order_mail_log');
    const refused = await migrate(shop.database.connectionString).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AdoptionRequiredError);
    expect((refused as AdoptionRequiredError).table.rows).toEqual({ sent: 2, failed: 2, sending: 2 });
    expect((refused as Error).message).toContain('npm run db:migrate -- --adopt');
    expect(await caseStudyRows(shop, 'order_mail_log')).toEqual(before);

    await shop.database.db.query('ALTER TABLE order_mail_log ADD COLUMN note TEXT');
    const unknown = await migrate(shop.database.connectionString, { adopt: true }).catch(
      (error: unknown) => error,
    );
    expect(unknown).toBeInstanceOf(UnknownMailLogTableError);
    expect(await caseStudyRows(shop, 'order_mail_log')).toEqual(before);
    const { rows } = await shop.database.db.query(`SELECT to_regclass('order_mail_attempts') AS audit`);
    expect(rows[0]).toEqual({ audit: null });
  });

  it('keeps every row and its meaning: old sent sends nothing, old failed sends once, old sending is settled by the policy', async () => {
    const shop = await shopBeforeAdoption('adopt_assume_sent');
    const { orders } = shop;
    const before = await caseStudyRows(shop, 'order_mail_log');

    const report = await migrate(shop.database.connectionString, { adopt: true });
    expect(report.adopted).toMatchObject({
      rows: { sent: 2, failed: 2, sending: 2 },
      keptAs: CASE_STUDY_TABLE_KEPT_AS,
    });
    // The original is kept as it was; every row is in the adopted table with its state and attempts.
    expect(await caseStudyRows(shop, CASE_STUDY_TABLE_KEPT_AS)).toEqual(before);
    expect(await caseStudyRows(shop, 'order_mail_log')).toEqual(before);
    for (const orderId of orders.sent) {
      expect(await readMailLog(shop.database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'legacy',
      });
      expect(await listAttempts(shop.database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'sent', outcome: 'legacy' },
      ]);
    }
    for (const orderId of orders.failed) {
      expect(await readMailLog(shop.database.db, orderId)).toMatchObject({
        state: 'failed',
        outcome: 'legacy',
        attempts: 2,
      });
    }
    for (const orderId of orders.sending) {
      const row = await readMailLog(shop.database.db, orderId);
      // Never "known not dispatched": the old system had no fence.
      expect(row).toMatchObject({ state: 'sending', outcome: null });
      expect(row!.dispatchedAt).not.toBeNull();
    }

    const { taskQueue } = await worker(shop, 'assume-sent');
    for (const orderId of orders.sent) {
      expect(await mailOf(orderId, taskQueue)).toMatchObject({
        result: { result: 'already-sent', outcome: 'legacy' },
      });
    }
    for (const orderId of [...orders.failed, ...orders.none]) {
      expect(await mailOf(orderId, taskQueue)).toMatchObject({
        result: { result: 'sent', outcome: 'accepted' },
      });
    }
    // An old 'sending' row is the old system's attempt of unknown outcome: the claim never takes it over.
    for (const orderId of orders.sending) {
      const { error } = (await mailOf(orderId, taskQueue)) as { error: unknown };
      expect(error).toBeInstanceOf(WorkflowFailedError);
      expect((error as WorkflowFailedError).cause).toMatchObject({ type: 'ClaimHeldElsewhere' });
    }

    // The sweep settles it by the policy, and a reset then finds it sent: still no message.
    const swept = await sweep(taskQueue);
    expect(swept.stuck.map((claim) => [claim.orderId, claim.runStatus, claim.settlement]).sort()).toEqual(
      orders.sending.map((orderId) => [orderId, 'OUTSIDE_WRITER', 'settled']).sort(),
    );
    for (const orderId of orders.sending) {
      expect(await readMailLog(shop.database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
      });
      const audit = await listAttempts(shop.database.db, orderId);
      expect(audit).toMatchObject([
        { attempt: 1, state: 'sent', outcome: 'unknown', unknownPolicy: 'assume-sent' },
      ]);
      expect(audit[0]!.dispatchedAt).not.toBeNull();
      expect(await resetAndWait(orderId)).toMatchObject({ result: 'already-sent', outcome: 'unknown' });
    }

    for (const orderId of [...orders.sent, ...orders.sending])
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    for (const orderId of [...orders.failed, ...orders.none])
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(
      (await caseStudyRows(shop, 'order_mail_log')).map((row) => row.orderId).sort(),
      'every order has its row, none lost',
    ).toEqual([...before.map((row) => row.orderId), ...orders.none].sort());
  });

  it('under assume-failed an old sending row is settled as failed by the policy (not as never sent), and then sent once', async () => {
    const shop = await shopBeforeAdoption('adopt_assume_failed');
    await migrate(shop.database.connectionString, { adopt: true });
    const { taskQueue } = await worker(shop, 'assume-failed');
    const [orderId] = shop.orders.sending;
    await mailOf(orderId!, taskQueue);
    await sweep(taskQueue);
    expect(await readMailLog(shop.database.db, orderId!)).toMatchObject({
      state: 'failed',
      outcome: 'unknown',
      unknownPolicy: 'assume-failed',
    });
    expect(sandbox.messagesFor(orderId!)).toHaveLength(0);
    // The policy says an unknown counts as not sent: the next run sends, once.
    expect(await resetAndWait(orderId!)).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(sandbox.messagesFor(orderId!)).toHaveLength(1);
  });
});
