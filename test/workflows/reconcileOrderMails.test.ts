// The reconciliation sweep (docs/design.md §7, G3) through its real Schedule: confirmed orders whose start was missed
// get exactly one mail, a second sweep changes nothing (and reads only since the first one's mark), and a
// claim stuck in 'sending' under a run that was really terminated is settled (released, or by the policy), in
// the audit trail and on the sweep's search attribute.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { advanceSweepProgress, SWEEP_OVERLAP_MS } from '../../src/db/sweepProgress';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import { OrderMailStuckOrders } from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { reconcileOrderMails } from '../../src/workflows/reconcileOrderMails';
import { SWEEP_GRACE_MS as GRACE_MS, sweepSettings, useSweepTestBed } from '../support/sweepTestBed';
import { startTestWorker, testSettings, waitFor } from '../support/testKit';

// Small batches, so a handful of orders already takes several batches.
const settings = sweepSettings(2);
const bed = useSweepTestBed('reconcile', { settings });
const { triggerSweep, orderConfirmedAgo, makeQuiet } = bed;

async function mailResult(orderId: string) {
  return bed.client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
}

describe('reconciliation', () => {
  it('starts each confirmed order that has no log row once; a second sweep changes nothing', async () => {
    const missed = [];
    for (let i = 0; i < 5; i++) missed.push(await orderConfirmedAgo(GRACE_MS + 60_000));
    const tooRecent = await orderConfirmedAgo(60_000);
    const pending = await orderConfirmedAgo(GRACE_MS + 60_000, 'pending');
    const cancelled = await orderConfirmedAgo(GRACE_MS + 60_000, 'cancelled');
    const beforeLookback = await orderConfirmedAgo(settings.lookbackMs + 60_000);
    // One whose start did happen, and whose mail went out: it has a row, so the sweep leaves it alone.
    const alreadyMailed = await orderConfirmedAgo(GRACE_MS + 60_000);
    await bed.client.workflow.execute(orderConfirmationMail, {
      workflowId: alreadyMailed,
      taskQueue: bed.worker.taskQueue,
      args: [alreadyMailed],
    });

    const first = await triggerSweep();
    expect(first.report).toMatchObject({ found: 5, started: 5, alreadyStarted: 0, stuck: [] });
    // Five orders in batches of two: three batches, the last one short.
    expect(first.report.batches).toBe(3);
    for (const orderId of missed) {
      expect(await mailResult(orderId)).toMatchObject({ result: 'sent', attempts: 1 });
      expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(bed.database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
      });
    }
    for (const orderId of [tooRecent, pending, cancelled, beforeLookback]) {
      expect(await readMailLog(bed.database.db, orderId)).toBeNull();
      expect(bed.sandbox.messagesFor(orderId)).toHaveLength(0);
    }
    expect(bed.sandbox.messagesFor(alreadyMailed)).toHaveLength(1);

    const messagesAfterFirst = bed.sandbox.messages().length;
    const second = await triggerSweep();
    expect(second.report).toMatchObject({ found: 0, started: 0, alreadyStarted: 0, stuck: [] });
    expect(bed.sandbox.messages()).toHaveLength(messagesAfterFirst);
    for (const orderId of missed) expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('after a complete sweep the next reads only since its mark (less the overlap); without the mark, all the window', async () => {
    await triggerSweep();
    const marks = async () =>
      (
        await bed.database.db.query<{ checkedThrough: Date }>(
          `SELECT checked_through AS "checkedThrough" FROM order_mail_reconcile_progress`,
        )
      ).rows.map((row) => row.checkedThrough.getTime());
    const [mark] = await marks();
    // A complete sweep marks every order up to its grace as looked at.
    expect(mark).toBeGreaterThan(Date.now() - GRACE_MS - 120_000);
    expect(mark).toBeLessThanOrEqual(Date.now() - GRACE_MS + 5_000);
    // The mark only moves forward: a sweep with a longer grace does not take it back.
    await advanceSweepProgress(bed.database.db, {
      namespace: bed.client.options.namespace,
      graceMs: 2 * GRACE_MS,
    });
    expect(await marks()).toEqual([mark]);

    // Inside the look-back window but before the mark less the overlap: an order the first sweep would have
    // found, had it been there then, and whose row no sweep since could have missed.
    const beforeMark = await orderConfirmedAgo(GRACE_MS + SWEEP_OVERLAP_MS + 3_600_000);
    const sinceMark = await orderConfirmedAgo(GRACE_MS + 60_000);
    const next = await triggerSweep();
    expect(next.report).toMatchObject({ found: 1, started: 1 });
    expect(await mailResult(sinceMark)).toMatchObject({ result: 'sent', attempts: 1 });
    expect(await readMailLog(bed.database.db, beforeMark)).toBeNull();

    // With no mark (a new database, or the row deleted), a sweep reads its whole window again.
    await bed.database.db.query(`DELETE FROM order_mail_reconcile_progress`);
    const whole = await triggerSweep();
    expect(whole.report).toMatchObject({ found: 1, started: 1 });
    expect(await mailResult(beforeMark)).toMatchObject({ result: 'sent', attempts: 1 });
    expect(bed.sandbox.messagesFor(beforeMark)).toHaveLength(1);
    expect(bed.sandbox.messagesFor(sinceMark)).toHaveLength(1);
  });

  it('a start that raced with the sweep is "already started", and the order still gets one mail', async () => {
    const orderId = await orderConfirmedAgo(GRACE_MS + 60_000);
    // The order service's own start arrives late, but before the sweep: its run has not claimed yet, since
    // no worker polls this queue, so the order still has no row when the sweep looks.
    const idle = `idle-${randomUUID()}`;
    await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: idle,
      args: [orderId],
    });

    const { report } = await triggerSweep();
    expect(report).toMatchObject({ found: 1, started: 0, alreadyStarted: 1 });
    // The order service's run goes on once a worker polls its queue: one mail in all.
    const late = await startTestWorker(
      { db: bed.database.db, mail: bed.mail, settings: testSettings() },
      { taskQueue: idle },
    );
    try {
      expect(await mailResult(orderId)).toMatchObject({ result: 'sent', attempts: 1 });
    } finally {
      await late.stop();
    }
    expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a large backlog is worked through in bounded runs: the sweep continues as new', async () => {
    const backlog = [];
    for (let i = 0; i < 7; i++) backlog.push(await orderConfirmedAgo(GRACE_MS + 60_000));
    // Started directly, with one batch per run, to see continue-as-new without creating 41 orders.
    const handle = await bed.client.workflow.start(reconcileOrderMails, {
      workflowId: `reconcile-backlog-${randomUUID()}`,
      taskQueue: bed.worker.taskQueue,
      args: [{ batchesPerRun: 1 }],
    });
    const report = await handle.result();
    expect(report).toMatchObject({ found: 7, started: 7, batches: 4 });
    expect((await handle.describe()).runId).not.toBe(handle.firstExecutionRunId);
    for (const orderId of backlog) {
      await mailResult(orderId);
      expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
    }
  });

  it('a run terminated before its send passed the fence: the sweep releases the row, and a retry sends once', async () => {
    const orderId = await orderConfirmedAgo(GRACE_MS + 60_000);
    // A run that claimed and was then terminated before its send passed the fence: its row stays 'sending'.
    const stalled = await bed.startStalledSendWorker({ identity: 'stalled' });
    try {
      await bed.client.workflow.start(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue: stalled.taskQueue,
        args: [orderId],
      });
      await stalled.underWay('the send to be under way');
      await bed.client.workflow.getHandle(orderId).terminate('test: the run dies holding its claim');
      await stalled.release();
    } finally {
      await stalled.stop();
    }
    await makeQuiet(orderId);

    const { report, workflowId } = await triggerSweep();
    expect(report.stuck).toEqual([
      expect.objectContaining({
        orderId,
        runStatus: 'TERMINATED',
        dispatched: false,
        attempts: 1,
        settlement: 'released',
      }),
    ]);
    const sweep = await bed.client.workflow.getHandle(workflowId).describe();
    expect(sweep.typedSearchAttributes.get(OrderMailStuckOrders)).toEqual([orderId]);
    const row = await readMailLog(bed.database.db, orderId);
    expect(row).toMatchObject({ state: 'failed', outcome: 'not_sent', attempts: 1 });
    expect(row!.lastError).toContain('terminated');
    const attempts = await listAttempts(bed.database.db, orderId);
    expect(attempts).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', dispatchedAt: null },
    ]);
    expect(attempts[0]!.recordedBy).toMatch(/^reconciliation sweep /);
    expect(bed.sandbox.messagesFor(orderId)).toHaveLength(0);

    // A second sweep finds nothing left; the operator's retry claims the released row at once and sends once
    // (a reset keeps the run's task queue: a worker polls it again, this time without the stall).
    expect((await triggerSweep()).report.stuck).toEqual([]);
    const resumed = await startTestWorker(stalled.dependencies, { taskQueue: stalled.taskQueue });
    try {
      const { runId } = await bed.client.workflow.getHandle(orderId).describe();
      await resetToFirstWorkflowTask(bed.client, {
        workflowId: orderId,
        runId,
        reason: 'test: retry',
        identity: 'test',
      });
      expect(await mailResult(orderId)).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    } finally {
      await resumed.stop();
    }
    expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a run terminated while its dispatched send is held: the sweep settles it by the policy, one message', async () => {
    const orderId = await orderConfirmedAgo(GRACE_MS + 60_000);
    await terminatedWhileDispatched(orderId);
    await makeQuiet(orderId);

    const { report } = await triggerSweep();
    bed.sandbox.releaseHeld();
    expect(report.stuck).toEqual([
      expect.objectContaining({ orderId, runStatus: 'TERMINATED', dispatched: true, settlement: 'settled' }),
    ]);
    expect(await readMailLog(bed.database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
    });
    const [attempt] = await listAttempts(bed.database.db, orderId);
    expect(attempt).toMatchObject({
      attempt: 1,
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
    });
    expect(attempt!.error).toContain('terminated');
    expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});

describe('reconciliation beside an open run of the same order', () => {
  it('settles a closed run’s claim even while a later run is open that may never reach its claim', async () => {
    const orderId = await orderConfirmedAgo(GRACE_MS + 60_000);
    await terminatedWhileDispatched(orderId);
    // A later run of the order that no worker polls: it would hold the row forever if the sweep waited for it.
    const later = await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: `nobody-polls-${randomUUID()}`,
      args: [orderId],
    });
    await makeQuiet(orderId);

    const { report } = await triggerSweep();
    bed.sandbox.releaseHeld();
    await later.terminate('test: done');
    expect(report.stuck).toEqual([
      expect.objectContaining({ orderId, runStatus: 'TERMINATED', dispatched: true, settlement: 'settled' }),
    ]);
    expect(await readMailLog(bed.database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'unknown' });
    expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});

/** Its run started, its send dispatched and held at the provider (which has the mail), then terminated. */
async function terminatedWhileDispatched(orderId: string): Promise<void> {
  bed.sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
  await bed.client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: bed.worker.taskQueue,
    args: [orderId],
  });
  await waitFor('the held send to be dispatched', async () =>
    (await readMailLog(bed.database.db, orderId))?.dispatchedAt ? true : undefined,
  );
  await bed.client.workflow.getHandle(orderId).terminate('test: terminated mid-send');
}
