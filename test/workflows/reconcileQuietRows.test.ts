// The sweep reaches every quiet 'sending' row, not only the oldest batch: rows held by open runs (waiting out a
// settle delay or a backoff) fill page after page, and a closed run's row behind them is still settled. Real
// Postgres (the product's claim statement), a real Temporal dev server (open runs on a queue nobody polls).
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { SweepSettings } from '../../src/activities/sweepActivities';
import { claimTokenOf, workflowScopeOf } from '../../src/db/claimToken';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import type { MailTransport } from '../../src/mail/types';

const GRACE_MS = 10 * 60_000;
const settings: SweepSettings = {
  graceMs: GRACE_MS,
  lookbackMs: 24 * 3_600_000,
  confirmedSince: null,
  batchSize: 100,
};
const OPEN_RUNS = 150;

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;
const openRuns: string[] = [];

beforeAll(async () => {
  database = await openTestDatabase('reconcile_quiet');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  worker = await startTestWorker(
    { db: database.db, mail, settings: testSettings() },
    { reconcile: { db: database.db, temporal: client, settings } },
  );
});

afterAll(async () => {
  await Promise.all(
    openRuns.map((orderId) =>
      client.workflow
        .getHandle(orderId)
        .terminate('test: done')
        .catch(() => undefined),
    ),
  );
  await worker?.stop();
  await client?.connection.close();
  await mail?.close();
  await sandbox?.close();
  await database?.close();
});

/** The order's row claimed (never dispatched) by `runId`, quiet since `quietForMs` ago. */
async function claimedBy(orderId: string, runId: string, quietForMs: number): Promise<void> {
  const namespace = inject('temporalNamespace');
  const decision = await claimOrderMailRow(database.db, {
    orderId,
    claimToken: claimTokenOf(namespace, orderId, runId),
    workflowScope: workflowScopeOf(namespace, orderId),
    issuedAt: new Date(),
    policy: 'assume-sent',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
  });
  expect(decision).toMatchObject({ kind: 'claimed' });
  await database.db.query(
    `UPDATE order_mail_log SET updated_at = now() - make_interval(secs => $2::double precision / 1000)
      WHERE order_id = $1`,
    [orderId, quietForMs],
  );
}

it('150 quiet rows of open runs ahead of a closed run’s row: the sweep passes them over and settles it', async () => {
  // Open runs (no worker polls their queue), their rows quiet for longer than the closed run's.
  const idle = `nobody-polls-${randomUUID()}`;
  for (let i = 0; i < OPEN_RUNS; i++) {
    const orderId = await createOrder(database.db);
    const run = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: idle,
      args: [orderId],
    });
    openRuns.push(orderId);
    await claimedBy(orderId, run.firstExecutionRunId, 2 * 3_600_000 + i * 1_000);
  }
  // A run Temporal no longer knows (its history gone), its claim never dispatched: to be released.
  const stuck = await createOrder(database.db);
  await claimedBy(stuck, randomUUID(), 3_600_000);

  const report = await client.workflow.execute(reconcileOrderMails, {
    workflowId: `reconcile-quiet-${randomUUID()}`,
    taskQueue: worker.taskQueue,
    args: [{}],
  });

  expect(report.stuck).toEqual([
    expect.objectContaining({
      orderId: stuck,
      runStatus: 'NOT_FOUND',
      dispatched: false,
      settlement: 'released',
    }),
  ]);
  expect(await readMailLog(database.db, stuck)).toMatchObject({ state: 'failed', outcome: 'not_sent' });
  const { rows } = await database.db.query<{ held: string }>(
    `SELECT count(*)::text AS held FROM order_mail_log WHERE state = 'sending' AND order_id = ANY($1::bigint[])`,
    [openRuns],
  );
  expect(rows[0]!.held).toBe(String(OPEN_RUNS));
}, 120_000);
