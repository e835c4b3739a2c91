// The workflow end to end: a real Temporal dev server, real Postgres, the real worker code in-process and the
// Mail API sandbox over loopback. Each test asserts the messages the sandbox received, the log row and the
// workflow's status.
import { activityInfo } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type ClaimOrderMailInput } from '../../src/activities';
import {
  startOrderConfirmationMail,
  describeOrderConfirmationMail,
  InvalidOrderIdError,
} from '../../src/client';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { FailureType } from '../../src/shared/failures';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { OrderMailRunOptions } from '../../src/shared/workflowSettings';
import { EXPLANATION_MEMO, orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openWorkflowTestBed,
  startTestWorker,
  testSettings,
  waitFor,
  type TestDatabase,
  type WorkflowTestBed,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let workers: WorkflowTestBed['workers'];
let bed: WorkflowTestBed | undefined;

beforeAll(async () => {
  bed = await openWorkflowTestBed('workflow');
  ({ database, sandbox, mail, client, workers } = bed);
});

afterAll(async () => {
  await bed?.close();
});

const EventType = temporal.api.enums.v1.EventType;
// A short bound for orders that never appear, so the test does not wait the default 5 minutes.
const SHORT_ORDER_WAIT_MS = 3_000;

async function runMail(
  orderId: string,
  policy: UnknownOutcomePolicy = 'assume-sent',
  options?: OrderMailRunOptions,
) {
  return client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers[policy].taskQueue,
    args: options === undefined ? [orderId] : [orderId, options],
  });
}

async function failureOfRun(
  orderId: string,
  policy: UnknownOutcomePolicy = 'assume-sent',
  options?: OrderMailRunOptions,
) {
  const error = await runMail(orderId, policy, options).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  return (error as WorkflowFailedError).cause as ApplicationFailure;
}

/** The shop's commit of an order whose id the mail was started with before it. */
async function insertOrderWithId(orderId: string): Promise<void> {
  await database.db.transaction(async (db) => {
    await db.query(
      `INSERT INTO orders (id, customer_name, customer_email, status, confirmed_at)
       VALUES ($1, '山田 太郎', 'late@example.com', 'confirmed', now())`,
      [orderId],
    );
    await db.query(
      `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
       VALUES ($1, 1, '有機緑茶 100g', 1, 1200)`,
      [orderId],
    );
  });
}

// Side by side: each test has its own order, and the sandbox's faults are queued by order.
describe.concurrent('orderConfirmationMail', () => {
  it('accepted: one message, a sent/accepted row with the provider id, a completed workflow', async () => {
    const orderId = await createOrder(database.db);
    const result = await runMail(orderId);
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(result).toMatchObject({
      result: 'sent',
      outcome: 'accepted',
      attempts: 1,
      providerMessageId: messages[0]!.id,
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 1,
      providerMessageId: messages[0]!.id,
      httpStatus: 202,
    });
    expect((await client.workflow.getHandle(orderId).describe()).status.name).toBe('COMPLETED');
  });

  for (const fault of [
    { kind: 'accept-then-drop' as const },
    { kind: 'accept-then-hang' as const, ms: 4_000 },
  ]) {
    it(`${fault.kind} under assume-sent: one message, sent/unknown, completed`, async () => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, fault);
      const result = await runMail(orderId, 'assume-sent');
      expect(result).toMatchObject({ result: 'sent', outcome: 'unknown', attempts: 1 });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
      });
    });

    it(`${fault.kind} under assume-failed: failed/unknown, then claimed and sent again, as the policy says`, async () => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, fault);
      const result = await runMail(orderId, 'assume-failed');
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
      // The policy trades a possible duplicate for never losing a mail, and the log shows where it happened.
      expect(sandbox.messagesFor(orderId)).toHaveLength(2);
      expect(await listAttempts(database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
        { attempt: 2, state: 'sent', outcome: 'accepted' },
      ]);
    });
  }

  for (const status of [400, 422]) {
    it(`HTTP ${status}: no message, failed/rejected, a Failed workflow with MailRejected in its cause chain`, async () => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'status', status });
      const failure = await failureOfRun(orderId);
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect(failure.type).toBe(FailureType.MailRejected);
      expect(failure.message).toContain(`Order ${orderId}`);
      expect(failure.message).toContain(`HTTP ${status}`);
      expect(failure.cause).toBeInstanceOf(ActivityFailure);
      expect((failure.cause as ActivityFailure).cause).toMatchObject({ type: FailureType.MailRejected });
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'failed',
        outcome: 'rejected',
        httpStatus: status,
      });
      expect((await client.workflow.getHandle(orderId).describe()).status.name).toBe('FAILED');
    });
  }

  it('cancelled while waiting for its order: Cancelled with nothing claimed, no row, nothing sent', async () => {
    const orderId = String(BigInt(await createOrder(database.db)) + 3_000n);
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: workers['assume-sent'].taskQueue,
      args: [orderId],
    });
    await waitFor('the run to wait for its order', async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.some((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED)
        ? true
        : undefined;
    });
    await handle.cancel();
    const error: unknown = await handle.result().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const described = await handle.describe();
    expect(described.status.name).toBe('CANCELLED');
    expect(String(described.memo?.[EXPLANATION_MEMO])).toContain('waiting for the order to become visible');
    expect(await readMailLog(database.db, orderId)).toBeNull();
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
  });

  it('a run that failed after its claim (rejected; attempts spent) is never started again by a start', async () => {
    const rejected = await createOrder(database.db);
    sandbox.queueFault(rejected, { kind: 'status', status: 422 });
    const gaveUp = await createOrder(database.db);
    sandbox.queueFault(gaveUp, { kind: 'status', status: 429 }, 5);
    for (const orderId of [rejected, gaveUp]) {
      const started = await startOrderConfirmationMail(client, orderId, {
        taskQueue: workers['assume-sent'].taskQueue,
      });
      expect(started.status).toBe('started');
      await client.workflow
        .getHandle(orderId)
        .result()
        .catch(() => undefined);
      const before = {
        requests: sandbox.requests().filter((request) => request.orderId === orderId).length,
        row: await readMailLog(database.db, orderId),
      };
      expect(before.row).toMatchObject({ state: 'failed' });
      // The order service may start an order as often as it likes: the failed run stays the order's only run.
      for (let start = 0; start < 3; start++) {
        expect(
          await startOrderConfirmationMail(client, orderId, { taskQueue: workers['assume-sent'].taskQueue }),
        ).toEqual({ status: 'already-started', orderId, runId: started.runId, runStatus: 'FAILED' });
      }
      expect((await client.workflow.getHandle(orderId).describe()).runId).toBe(started.runId);
      expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(
        before.requests,
      );
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
      expect(await readMailLog(database.db, orderId)).toEqual(before.row);
    }
  });

  it('an invalid recipient is refused before sending, not retried (test/workflows/refusedBeforeSending.test.ts)', async () => {
    const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
    const failure = await failureOfRun(orderId);
    expect(failure.type).toBe(FailureType.MailRefused);
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
  });

  it('429 with Retry-After: retried no earlier than the delay, one message, attempts counted', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429, retryAfterSeconds: 2 });
    const result = await runMail(orderId);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    const [first, second] = await listAttempts(database.db, orderId);
    expect(first).toMatchObject({ outcome: 'not_sent', httpStatus: 429 });
    expect(second!.claimedAt.getTime() - first!.finishedAt.getTime()).toBeGreaterThanOrEqual(2_000);
  });

  it('429: retried after the backoff, one message, attempts counted', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429 }, 2);
    const result = await runMail(orderId);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 3 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    const attempts = await listAttempts(database.db, orderId);
    expect(attempts.map((attempt) => attempt.outcome)).toEqual(['not_sent', 'not_sent', 'accepted']);
    // Backoff 200 ms, then 400 ms (testSettings).
    expect(attempts[1]!.claimedAt.getTime() - attempts[0]!.finishedAt.getTime()).toBeGreaterThanOrEqual(200);
    expect(attempts[2]!.claimedAt.getTime() - attempts[1]!.finishedAt.getTime()).toBeGreaterThanOrEqual(400);
  });

  // Alone (the tests before it done, the ones after not begun): the refusal is the whole sandbox's.
  it(
    'connection refused: not_sent, retried until the API is back, one message',
    { concurrent: false },
    async () => {
      const orderId = await createOrder(database.db);
      await sandbox.refuseConnectionsFor(1_500);
      const result = await runMail(orderId);
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
      expect(result.attempts).toBeGreaterThanOrEqual(2);
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      const attempts = await listAttempts(database.db, orderId);
      expect(attempts[0]).toMatchObject({ state: 'failed', outcome: 'not_sent' });
      expect(attempts[0]!.error).toContain('ECONNREFUSED');
      expect(attempts.at(-1)).toMatchObject({ state: 'sent', outcome: 'accepted' });
    },
  );

  it('gives up after the configured attempts with a Failed workflow, leaving a failed row', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429 }, 10);
    const failure = await failureOfRun(orderId);
    expect(failure.type).toBe(FailureType.MailNotSentGaveUp);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      attempts: 5,
    });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
  });

  it('the same order started 20 times concurrently from several clients: one workflow, one message', async () => {
    const orderId = await createOrder(database.db);
    const clients = await Promise.all([
      connectTestClient(),
      connectTestClient(),
      connectTestClient(),
      connectTestClient(),
    ]);
    try {
      const starts = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          startOrderConfirmationMail(clients[index % clients.length]!, orderId, {
            taskQueue: workers['assume-sent'].taskQueue,
          }),
        ),
      );
      expect(starts.filter((start) => start.status === 'started')).toHaveLength(1);
      expect(starts.filter((start) => start.status === 'already-started')).toHaveLength(19);
      await client.workflow.getHandle(orderId).result();
      // A start after completion is still "already started", and sends nothing.
      expect(await startOrderConfirmationMail(clients[0], orderId)).toMatchObject({
        status: 'already-started',
        orderId,
      });
    } finally {
      await Promise.all(clients.map((each) => each.connection.close()));
    }
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', attempts: 1 });
  });

  it('a missing order: waits its bound, then a Failed workflow with OrderNotFound, nothing sent, nothing written', async () => {
    const orderId = '8999999999999999';
    const startedAt = Date.now();
    const failure = await failureOfRun(orderId, 'assume-sent', { orderVisibleWaitMs: SHORT_ORDER_WAIT_MS });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(SHORT_ORDER_WAIT_MS);
    expect(failure.type).toBe(FailureType.OrderNotFound);
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
    expect(await readMailLog(database.db, orderId)).toBeNull();
    expect((await client.workflow.getHandle(orderId).describe()).status.name).toBe('FAILED');
  });

  it('an order that becomes visible 2 s after the start: one mail within seconds of it, a sent row', async () => {
    // Started before its order exists, as the order service may do a moment before its commit is visible.
    const orderId = String(BigInt(await createOrder(database.db)) + 1_000n);
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: workers['assume-sent'].taskQueue,
      args: [orderId],
    });
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await insertOrderWithId(orderId);
    const visibleAt = Date.now();
    const result = await handle.result();
    // The wait's backoff reaches 2 s by then (0.5, 1, 2 s): the next claim finds the order within it.
    expect(Date.now() - visibleAt).toBeLessThan(8_000);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', attempts: 1 });
  });

  it('a malformed order id: the client refuses it and starts nothing; the workflow refuses it too', async () => {
    for (const bad of ['abc', '-1', '0', '01', '1.5', '', '99999999999999999999', 12.5, null]) {
      await expect(startOrderConfirmationMail(client, bad)).rejects.toBeInstanceOf(InvalidOrderIdError);
    }
    await expect(describeOrderConfirmationMail(client, '99999999999999999')).resolves.toBeNull();
    const failure = await failureOfRun('not-a-number');
    expect(failure.type).toBe(FailureType.InvalidOrderId);
  });
});

describe('lost completions and re-executions', () => {
  it('the claim activity run twice for the same run (a lost completion): still claimed, one send', async () => {
    const orderId = await createOrder(database.db);
    const deps = {
      db: database.db,
      mail,
      settings: testSettings(),
      workerIdentity: 'lost-completion',
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
    };
    const real = createActivities(deps);
    // The first attempt commits its claim, then "loses" its completion; Temporal retries the activity.
    const activities = {
      ...real,
      claimOrderMail: async (input: ClaimOrderMailInput) => {
        const result = await real.claimOrderMail(input);
        if (activityInfo().attempt === 1)
          throw ApplicationFailure.retryable('completion lost after commit', 'TestLostCompletion');
        return result;
      },
    };
    const worker = await startTestWorker(deps, { activities });
    try {
      const result = await client.workflow.execute(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue: worker.taskQueue,
        args: [orderId],
      });
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    } finally {
      await worker.stop();
    }
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
  });
});
