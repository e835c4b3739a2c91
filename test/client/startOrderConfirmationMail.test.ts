// The order service's start (src/client.ts) when the workflow id is already taken. "Already started" means
// the order's mail is handled only if the id is held by an orderConfirmationMail run; a workflow of another
// type with the same id (a shared namespace) must be a clear error, and the reconciliation sweep must report
// it as a conflict instead of counting it as started.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSweepActivities, type StartBatchResult } from '../../src/activities/sweepActivities';
import {
  OrderMailWorkflowIdTakenError,
  startOrderConfirmationMail,
  type StartResult,
} from '../../src/client';
import { connectTestClient, createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let client: Client;
// Nobody polls these queues: the workflows just stay open (or are terminated) to hold their ids.
const idleQueue = `nobody-polls-${randomUUID()}`;
const started: string[] = [];

beforeAll(async () => {
  database = await openTestDatabase('client_start');
  client = await connectTestClient();
});

afterAll(async () => {
  for (const workflowId of started) {
    await client.workflow
      .getHandle(workflowId)
      .terminate('test cleanup')
      .catch(() => undefined);
  }
  await client.connection.close();
  await database.close();
});

async function holdIdWithAnotherType(workflowId: string) {
  const handle = await client.workflow.start('inventorySync', { workflowId, taskQueue: idleQueue, args: [] });
  started.push(workflowId);
  return handle;
}

async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

describe('startOrderConfirmationMail', () => {
  it('a second start of our own workflow is already-started', async () => {
    const orderId = await createOrder(database.db);
    const first = await startOrderConfirmationMail(client, orderId, { taskQueue: idleQueue });
    started.push(orderId);
    expect(first.status).toBe('started');
    const second = await startOrderConfirmationMail(client, orderId, { taskQueue: idleQueue });
    expect(second).toMatchObject<Partial<StartResult>>({ status: 'already-started', orderId });
  });

  it('an open workflow of another type with the id: an error naming its type and run', async () => {
    const orderId = await createOrder(database.db);
    const other = await holdIdWithAnotherType(orderId);
    const error = await errorOf(startOrderConfirmationMail(client, orderId, { taskQueue: idleQueue }));
    expect(error).toBeInstanceOf(OrderMailWorkflowIdTakenError);
    expect(error).toMatchObject({
      workflowId: orderId,
      workflowType: 'inventorySync',
      runId: other.firstExecutionRunId,
      code: 'ERR_ORDER_MAIL_WORKFLOW_ID_TAKEN',
    });
    expect((error as Error).message).toContain('inventorySync');
    expect((error as Error).message).toContain(other.firstExecutionRunId);
  });

  it('a closed workflow of another type with the id: the same error (its id is never reused)', async () => {
    const orderId = await createOrder(database.db);
    const other = await holdIdWithAnotherType(orderId);
    await other.terminate('closed before the mail was started');
    const error = await errorOf(startOrderConfirmationMail(client, orderId, { taskQueue: idleQueue }));
    expect(error).toBeInstanceOf(OrderMailWorkflowIdTakenError);
    expect(error).toMatchObject({ workflowType: 'inventorySync', runId: other.firstExecutionRunId });
  });
});

describe('the reconciliation sweep', () => {
  it('reports an order whose id another workflow type holds as a conflict, not as already started', async () => {
    const ours = await createOrder(database.db);
    const taken = await createOrder(database.db);
    const missed = await createOrder(database.db);
    await database.db.query(
      `UPDATE orders SET confirmed_at = now() - interval '1 hour' WHERE id = ANY($1::bigint[])`,
      [[ours, taken, missed]],
    );
    await startOrderConfirmationMail(client, ours, { taskQueue: idleQueue });
    started.push(ours, missed);
    const other = await holdIdWithAnotherType(taken);

    const activities = createSweepActivities(
      {
        db: database.db,
        temporal: client,
        settings: { graceMs: 60_000, lookbackMs: 86_400_000, confirmedSince: null, batchSize: 10 },
      },
      {
        settings: { unknownOutcomePolicy: 'assume-sent', sendTimeoutMs: 8_000 },
        workerIdentity: 'sweep-test',
      },
    );
    const env = new MockActivityEnvironment({ taskQueue: idleQueue });
    const result: StartBatchResult = await env.run(() =>
      activities.startMailsForConfirmedOrders({ after: null }),
    );
    expect(result).toMatchObject({ found: 3, started: 1, alreadyStarted: 1 });
    expect(result.conflicts).toEqual([
      { orderId: taken, workflowType: 'inventorySync', runId: other.firstExecutionRunId },
    ]);
  });
});
