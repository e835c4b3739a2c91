// Reset, the operator's "send again" (docs/design.md §4, §6), through the real Temporal API: the same request the Web
// UI's Reset makes, to the first workflow task. Each test asserts the messages the sandbox received and the log
// row, so a reset that sends a duplicate, leaves a row in 'sending' or loses an outcome fails here.
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities, type SendOrderMailInput } from '../../src/activities';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { FailureType } from '../../src/shared/failures';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import {
  OrderMailAttempts,
  OrderMailHttpStatus,
  OrderMailOutcome,
  OrderMailState,
} from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail, type OrderMailResult } from '../../src/workflows/orderConfirmationMail';
import {
  createOrder,
  openWorkflowTestBed,
  startTestWorker,
  testSettings,
  waitFor,
  type TestDatabase,
  type WorkflowTestBed,
} from '../support/testKit';
import { spawnWorkerProcess } from '../support/workerProcess';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let workers: WorkflowTestBed['workers'];
let bed: WorkflowTestBed | undefined;

beforeAll(async () => {
  bed = await openWorkflowTestBed('reset');
  ({ database, sandbox, mail, client, workers } = bed);
});

afterAll(async () => {
  await bed?.close();
});

function start(orderId: string, taskQueue: string) {
  return client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

/** Resets the order's current run to its first workflow task, and returns the new run's handle. */
async function reset(orderId: string) {
  const { runId } = await client.workflow.getHandle(orderId).describe();
  const { newRunId } = await resetToFirstWorkflowTask(client, {
    workflowId: orderId,
    runId,
    reason: 'test: reset after the cause was fixed',
    identity: 'reset-test',
  });
  return client.workflow.getHandle<typeof orderConfirmationMail>(orderId, newRunId, { followRuns: false });
}

async function shownInUi(orderId: string) {
  const { typedSearchAttributes, status } = await client.workflow.getHandle(orderId).describe();
  return {
    status: status.name,
    state: typedSearchAttributes.get(OrderMailState),
    outcome: typedSearchAttributes.get(OrderMailOutcome),
    attempts: typedSearchAttributes.get(OrderMailAttempts),
    httpStatus: typedSearchAttributes.get(OrderMailHttpStatus),
  };
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  return (error as WorkflowFailedError).cause as ApplicationFailure;
}

// The four describes run side by side (issue 38): each test its own order, its faults queued for that order
// alone, and it reads that order's rows, runs and messages only. The in-flight tests stay one after the other
// among themselves: sandbox.releaseHeld() lets every held answer go, another test's too.
describe('reset of a failed order after its cause was fixed', { concurrent: true }, () => {
  it('sends exactly one new mail, attempts + 1, and the UI shows the way there', async ({ expect }) => {
    // The provider refuses the recipient (422): rejected, the workflow fails. (An address that is not one
    // plain address never gets that far: test/workflows/refusedBeforeSending.test.ts.)
    const orderId = await createOrder(database.db, { customerEmail: 'undeliverable@example.com' });
    sandbox.queueFault(orderId, { kind: 'status', status: 422 });
    const failure = await failureOf(start(orderId, workers['assume-sent'].taskQueue).then((h) => h.result()));
    expect(failure.type).toBe(FailureType.MailRejected);
    // What the UI shows of a failed run: the order, the reason and the HTTP status, and the filterable state.
    expect(failure.message).toContain(`Order ${orderId}`);
    expect(failure.message).toContain('HTTP 422');
    expect(failure.message).toMatch(/reset/i);
    expect(await shownInUi(orderId)).toEqual({
      status: 'FAILED',
      state: 'failed',
      outcome: 'rejected',
      attempts: 1,
      httpStatus: 422,
    });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);

    await database.db.query(`UPDATE orders SET customer_email = $2 WHERE id = $1`, [
      orderId,
      'fixed@example.com',
    ]);
    const result = await (await reset(orderId)).result();

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.to).toBe('fixed@example.com');
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 2,
      providerMessageId: messages[0]!.id,
    });
    expect(await shownInUi(orderId)).toEqual({
      status: 'COMPLETED',
      state: 'sent',
      outcome: 'accepted',
      attempts: 2,
      httpStatus: 202,
    });
  });
});

describe('reset of a run that gave up', { concurrent: true }, () => {
  it('the new run gets its full attempts again, with its backoff from the beginning', async ({ expect }) => {
    // testSettings: 5 attempts a run, backoff 200 ms doubling to 2 s. Seven refusals: run 1 uses 5 and gives up.
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429 }, 7);
    const failure = await failureOf(start(orderId, workers['assume-sent'].taskQueue).then((h) => h.result()));
    expect(failure.type).toBe(FailureType.MailNotSentGaveUp);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', attempts: 5 });

    const handle = await reset(orderId);
    const result = await handle.result();

    // Attempts 6 and 7 of the order are refused too; the run's third attempt (8) is accepted.
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 8 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    const timers = ((await handle.fetchHistory()).events ?? []).flatMap((event) => {
      const timeout = event.timerStartedEventAttributes?.startToFireTimeout;
      return timeout ? [Number(timeout.seconds ?? 0) * 1000 + Math.round((timeout.nanos ?? 0) / 1e6)] : [];
    });
    expect(timers).toEqual([200, 400]);
  });
});

describe('reset of a sent order', { concurrent: true }, () => {
  it('sends nothing; the run completes saying why, and the row is untouched', async ({ expect }) => {
    const orderId = await createOrder(database.db);
    await (await start(orderId, workers['assume-sent'].taskQueue)).result();
    const before = await readMailLog(database.db, orderId);
    expect(before).toMatchObject({ state: 'sent', outcome: 'accepted', attempts: 1 });

    const result: OrderMailResult = await (await reset(orderId)).result();

    expect(result).toMatchObject({ result: 'already-sent', outcome: 'accepted', attempts: 1 });
    expect(result.explanation).toContain('sent nothing');
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
    expect(await shownInUi(orderId)).toMatchObject({ status: 'COMPLETED', state: 'sent', attempts: 1 });
  });
});

describe('reset while a send is in flight (the orphaned-claim rules)', { concurrent: true }, () => {
  describe('one after the other', { concurrent: false }, () => {
    async function startAndHoldTheResponse(orderId: string, policy: UnknownOutcomePolicy) {
      sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
      await start(orderId, workers[policy].taskQueue);
      // The provider has the message; the answer is held, so the run is between its dispatch and its record.
      await waitFor('the held send to be dispatched', async () =>
        (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
      );
      // The fence is written before the request leaves, so on a busy machine the row can lead the provider.
      await waitFor('the provider to have the message', async () =>
        sandbox.messagesFor(orderId).length > 0 ? true : undefined,
      );
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }

    it('dispatched, assume-sent: the new run settles it as sent/unknown and sends nothing more', async () => {
      const orderId = await createOrder(database.db);
      await startAndHoldTheResponse(orderId, 'assume-sent');

      const result = await (await reset(orderId)).result();
      sandbox.releaseHeld();

      expect(result).toMatchObject({ result: 'already-sent', outcome: 'unknown' });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
        attempts: 1,
      });
      const [attempt] = await listAttempts(database.db, orderId);
      expect(attempt).toMatchObject({ attempt: 1, outcome: 'unknown', unknownPolicy: 'assume-sent' });
      expect(attempt!.error).toContain('closed after dispatching');
      expect(await shownInUi(orderId)).toMatchObject({ status: 'COMPLETED', state: 'unknown' });
    });

    it('dispatched, assume-failed: the policy sends again, and the log says so', async () => {
      const orderId = await createOrder(database.db);
      await startAndHoldTheResponse(orderId, 'assume-failed');

      const result = await (await reset(orderId)).result();
      sandbox.releaseHeld();

      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
      // The policy trades a possible duplicate for never losing a mail; here the first one did arrive.
      expect(sandbox.messagesFor(orderId)).toHaveLength(2);
      expect(await listAttempts(database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
        { attempt: 2, state: 'sent', outcome: 'accepted' },
      ]);
    });

    it('never dispatched: the new run takes the claim over and sends once; the old send is fenced off', async () => {
      const orderId = await createOrder(database.db);
      const deps = {
        db: database.db,
        mail,
        settings: testSettings(),
        workerIdentity: 'held-before-fence',
        mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      };
      const real = createActivities(deps);
      // The first send of this order stops before its dispatch fence until released: a worker that claimed,
      // then stalled (GC pause, network partition) before making any request.
      let releaseFirstSend!: () => void;
      const firstSendReleased = new Promise<void>((resolve) => (releaseFirstSend = resolve));
      let firstSend: Promise<unknown> | null = null;
      const activities = {
        ...real,
        sendOrderMail: (input: SendOrderMailInput) => {
          if (firstSend !== null) return real.sendOrderMail(input);
          firstSend = firstSendReleased.then(() => real.sendOrderMail(input));
          return firstSend;
        },
      };
      const worker = await startTestWorker(deps, { activities });
      try {
        await start(orderId, worker.taskQueue);
        await waitFor('the first send to be under way', async () => (firstSend === null ? undefined : true));
        expect(await readMailLog(database.db, orderId)).toMatchObject({
          state: 'sending',
          dispatchedAt: null,
        });

        const result = await (await reset(orderId)).result();
        expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });

        releaseFirstSend();
        const stale = await firstSend!.then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(stale).toMatchObject({ type: FailureType.ClaimLost });
      } finally {
        await worker.stop();
      }
      expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(1);
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        attempts: 2,
      });
      expect(await listAttempts(database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent' },
        { attempt: 2, state: 'sent', outcome: 'accepted' },
      ]);
    });

    it('after its worker died mid-send: reset at once, without waiting for the send timeout; one message', async () => {
      const taskQueue = `died-${randomUUID()}`;
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
      const doomed = spawnWorkerProcess({
        DATABASE_URL: database.connectionString,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        TEMPORAL_NAMESPACE: inject('temporalNamespace'),
        MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
        TEMPORAL_TASK_QUEUE: taskQueue,
        MAIL_API_BASE_URL: sandbox.url,
        MAIL_API_KEY: 'sandbox-key',
        // Long enough that only the reset, not Temporal's timeout, can settle this in the test's time.
        SEND_ACTIVITY_TIMEOUT_MS: '120000',
        UNKNOWN_OUTCOME_POLICY: 'assume-sent',
        // The run's prebuilt bundle, as the image sets it: this test is about the reset, not webpack at start.
        WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
      });
      try {
        await doomed.started;
        await start(orderId, taskQueue);
        await waitFor('the send to reach the sandbox', async () =>
          sandbox.messagesFor(orderId).length === 1 ? true : undefined,
        );
        doomed.child.kill('SIGKILL');
        await doomed.exited;
      } finally {
        doomed.child.kill('SIGKILL');
      }
      expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });

      const survivor = await startTestWorker(
        { db: database.db, mail, settings: testSettings({ unknownOutcomePolicy: 'assume-sent' }) },
        { taskQueue },
      );
      try {
        const result = await (await reset(orderId)).result();
        expect(result).toMatchObject({ result: 'already-sent', outcome: 'unknown', attempts: 1 });
      } finally {
        await survivor.stop();
        sandbox.releaseHeld();
      }
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
      });
    }, 90_000);
  });
});
