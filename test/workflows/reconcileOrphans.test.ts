// The sweep and closed runs that left no log row (issue 22, finding 9), and two namespaces sharing one database
// (finding 10). A confirmed order whose only run closed before its first claim (it failed OrderNotFound because
// it started before the order was visible; it was terminated before it claimed) has no row and no open run:
// the sweep starts it again, once, and the order gets one mail. A claim held by a run of ANOTHER namespace is
// never taken for a closed run of this one.
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { google } from '@temporalio/proto';
import { describe, expect, inject, it } from 'vitest';
import { RESTARTED_BY_MEMO, startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { noOrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import { FailureType } from '../../src/shared/failures';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { SWEEP_GRACE_MS as GRACE_MS, sweepSettings, useSweepTestBed } from '../support/sweepTestBed';
import { createOrder, waitFor } from '../support/testKit';

// What the sweep counted for order_mail_orders_left_without_mail_total.
const leftWithoutMail: string[] = [];
const bed = useSweepTestBed('reconcile_closed', {
  settings: sweepSettings(10),
  metrics: { ...noOrderMailMetrics, orderLeftWithoutMail: (reason) => void leftWithoutMail.push(reason) },
});
const { confirmedAgo } = bed;

/** The report of the sweep the schedule starts now. */
async function triggerSweep() {
  return (await bed.triggerSweep()).report;
}

describe('closed runs that made no log row', () => {
  it('a run that failed OrderNotFound before the order was visible, and one terminated before its claim, are started again once', async () => {
    // Started before its order exists (the order service started it before its commit was visible).
    const early = String(BigInt(await createOrder(bed.database.db)) + 500n);
    await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: early,
      taskQueue: bed.worker.taskQueue,
      // A short wait for the order, so the run fails OrderNotFound before the order is inserted below.
      args: [early, { orderVisibleWaitMs: 1_000 }],
    });
    const failure: unknown = await bed.client.workflow
      .getHandle(early)
      .result()
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(((failure as WorkflowFailedError).cause as { type?: string }).type).toBe(
      FailureType.OrderNotFound,
    );
    await bed.database.db.query(
      `INSERT INTO orders (id, customer_name, customer_email, status, confirmed_at)
       VALUES ($1, '山田 太郎', 'early@example.com', 'confirmed', now())`,
      [early],
    );
    await bed.database.db.query(
      `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
       VALUES ($1, 1, '有機緑茶 100g', 1, 1200)`,
      [early],
    );
    await confirmedAgo(early, GRACE_MS + 60_000);

    // Terminated before its first claim: no worker polled its queue.
    const terminated = await createOrder(bed.database.db);
    await confirmedAgo(terminated, GRACE_MS + 60_000);
    await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: terminated,
      taskQueue: `nobody-polls-${randomUUID()}`,
      args: [terminated],
    });
    await bed.client.workflow.getHandle(terminated).terminate('test: the run dies before its claim');

    // The order service's own start, again, after the commit: it starts nothing, but says the run is closed.
    const again = await startOrderConfirmationMail(bed.client, terminated, {
      taskQueue: bed.worker.taskQueue,
    });
    expect(again).toMatchObject({ status: 'already-started', runStatus: 'TERMINATED' });

    const report = await triggerSweep();
    expect(report).toMatchObject({ found: 2, started: 0, restarted: 2, alreadyStarted: 0 });
    for (const orderId of [early, terminated]) {
      const result = await bed.client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
      expect(result).toMatchObject({ result: 'sent', attempts: 1 });
      expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(bed.database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
      });
    }

    // A second sweep finds rows, starts nothing, and sends nothing.
    const second = await triggerSweep();
    expect(second).toMatchObject({ found: 0, restarted: 0 });
    for (const orderId of [early, terminated]) expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a run the sweep itself restarted that closed again without a row is not started again: the sweep names it', async () => {
    const orderId = await createOrder(bed.database.db);
    await confirmedAgo(orderId, GRACE_MS + 60_000);
    // As the sweep starts it again (its memo says so), then closed before its claim.
    await bed.client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: `nobody-polls-${randomUUID()}`,
      args: [orderId],
      memo: { [RESTARTED_BY_MEMO]: 'reconciliation sweep' },
    });
    await bed.client.workflow.getHandle(orderId).terminate('test: the restart dies too');

    const counted = leftWithoutMail.length;
    const report = await triggerSweep();
    expect(report).toMatchObject({ restarted: 0, closedWithoutRow: [orderId] });
    // Counted for the alert (OrderMailOrdersLeftWithoutMail).
    expect(leftWithoutMail.slice(counted)).toEqual(['closed-without-row']);
    expect((await bed.client.workflow.getHandle(orderId).describe()).status.name).toBe('TERMINATED');
    expect(await readMailLog(bed.database.db, orderId)).toBeNull();
  });
});

describe('two namespaces sharing one database', () => {
  it('a sweep never settles a claim held by a run of another namespace', async () => {
    const otherNamespace = `other-${randomUUID().slice(0, 8)}`;
    await bed.client.connection.workflowService.registerNamespace({
      namespace: otherNamespace,
      workflowExecutionRetentionPeriod: google.protobuf.Duration.fromObject({ seconds: 86_400 }),
    });
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const other = new Client({ connection, namespace: otherNamespace });
    await waitFor('the new namespace to be usable', async () =>
      ensureSearchAttributes(connection, otherNamespace).then(
        () => true,
        () => undefined,
      ),
    );

    const orderId = await createOrder(bed.database.db);
    await confirmedAgo(orderId, GRACE_MS + 60_000);
    // Holds its claim, before the dispatch fence, while the other namespace's sweep looks.
    const otherWorker = await bed.startStalledSendWorker({
      identity: 'other-namespace',
      temporal: { address: inject('temporalAddress'), namespace: otherNamespace },
    });
    try {
      await waitFor(
        'the other namespace to take a start',
        async () =>
          other.workflow
            .start(orderConfirmationMail, {
              workflowId: orderId,
              taskQueue: otherWorker.taskQueue,
              args: [orderId],
            })
            .then(
              () => true,
              () => undefined,
            ),
        30_000,
      );
      await otherWorker.underWay('the other namespace’s send to be under way');
      const held = await readMailLog(bed.database.db, orderId);
      expect(held).toMatchObject({ state: 'sending' });
      expect(held!.claimToken.startsWith(`${otherNamespace}/`)).toBe(true);
      // Quiet for longer than the grace: a candidate for the sweep, were the run its own.
      await bed.makeQuiet(orderId);

      const report = await triggerSweep();
      expect(report.stuck.map((claim) => claim.orderId)).not.toContain(orderId);
      expect(await readMailLog(bed.database.db, orderId)).toMatchObject({
        state: 'sending',
        claimToken: held!.claimToken,
        attempts: 1,
      });
    } finally {
      await otherWorker.release();
      await other.workflow
        .getHandle(orderId)
        .terminate('test: done')
        .catch(() => undefined);
      await otherWorker.stop();
      await connection.close();
    }
  });
});
