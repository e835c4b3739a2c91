// The sweep reaches every quiet 'sending' row, not only the oldest batch: rows held by open runs (waiting out a
// settle delay or a backoff) fill page after page, and a closed run's row behind them is still settled. Real
// Postgres (the product's claim statement), a real Temporal dev server (open runs on a queue nobody polls).
import { randomUUID } from 'node:crypto';
import { afterAll, expect, inject, it } from 'vitest';
import { claimTokenOf, workflowScopeOf } from '../../src/db/claimToken';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
import { sweepSettings, useSweepTestBed } from '../support/sweepTestBed';
import { createOrder } from '../support/testKit';

const OPEN_RUNS = 150;

const bed = useSweepTestBed('reconcile_quiet', { settings: sweepSettings(100) });
const openRuns: string[] = [];

// Registered after the bed's: runs before it closes the client.
afterAll(async () => {
  await Promise.all(
    openRuns.map((orderId) =>
      bed.client.workflow
        .getHandle(orderId)
        .terminate('test: done')
        .catch(() => undefined),
    ),
  );
});

/** The order's row claimed (never dispatched) by `runId`, quiet since `quietForMs` ago. */
async function claimedBy(orderId: string, runId: string, quietForMs: number): Promise<void> {
  const namespace = inject('temporalNamespace');
  const decision = await claimOrderMailRow(bed.database.db, {
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
  await bed.makeQuiet(orderId, quietForMs);
}

it('150 quiet rows of open runs ahead of a closed run’s row: the sweep passes them over and settles it', async () => {
  // Open runs (no worker polls their queue), their rows quiet for longer than the closed run's.
  const idle = `nobody-polls-${randomUUID()}`;
  for (let i = 0; i < OPEN_RUNS; i++) {
    const orderId = await createOrder(bed.database.db);
    const run = await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: idle,
      args: [orderId],
    });
    openRuns.push(orderId);
    await claimedBy(orderId, run.firstExecutionRunId, 2 * 3_600_000 + i * 1_000);
  }
  // A run Temporal no longer knows (its history gone), its claim never dispatched: to be released.
  const stuck = await createOrder(bed.database.db);
  await claimedBy(stuck, randomUUID(), 3_600_000);

  const report = await bed.client.workflow.execute(reconcileOrderMails, {
    workflowId: `reconcile-quiet-${randomUUID()}`,
    taskQueue: bed.worker.taskQueue,
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
  expect(await readMailLog(bed.database.db, stuck)).toMatchObject({ state: 'failed', outcome: 'not_sent' });
  const { rows } = await bed.database.db.query<{ held: string }>(
    `SELECT count(*)::text AS held FROM order_mail_log WHERE state = 'sending' AND order_id = ANY($1::bigint[])`,
    [openRuns],
  );
  expect(rows[0]!.held).toBe(String(OPEN_RUNS));
}, 120_000);
