// A cancel (the Web UI's Cancel, `temporal workflow cancel`) at each point of an attempt, through the real
// Temporal API: during the claim, during a dispatched send held by the sandbox, during the not-sent backoff
// and during the record. Each ends with a terminal row (never 'sending'), 0 or 1 messages, and the workflow
// Cancelled with an explanation an operator can read (its memo: a cancelled run carries no result).
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type ActivityDependencies } from '../../src/activities';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { createGenericMailApiClient } from '../../dev/devtools/genericMailApiClient';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { EXPLANATION_MEMO, orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { ActivityHolds } from '../support/heldActivities';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const EventType = temporal.api.enums.v1.EventType;

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;

const holds = new ActivityHolds();

beforeAll(async () => {
  database = await openTestDatabase('cancel');
  sandbox = await startMailSandbox();
  // Deadlines long enough that a send held by the sandbox ends when the test releases it, not by itself.
  mail = createGenericMailApiClient({
    baseUrl: sandbox.url,
    apiKey: 'sandbox-key',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 30_000,
    overallTimeoutMs: 40_000,
    connections: 4,
  });
  client = await connectTestClient();
  const deps: ActivityDependencies = {
    db: database.db,
    mail,
    settings: testSettings({ sendTimeoutMs: 50_000 }),
    workerIdentity: 'cancel-test',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  worker = await startTestWorker(deps, { activities: holds.wrap(createActivities(deps)) });
});

afterAll(async () => {
  holds.releaseAll();
  await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

function start(orderId: string) {
  return client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: worker.taskQueue,
    args: [orderId],
    // A workflow task waiting on a held claim or record (local activities) completes only by the worker's
    // heartbeat at 80% of this timeout: at the default 10 s, a cancel during either waited 2 × 8 s for nothing.
    workflowTaskTimeout: 3_000,
  });
}

/** How the run ended: its result (a CancelledFailure, for a cancelled run), status and memo. */
async function ending(handle: WorkflowHandle<typeof orderConfirmationMail>) {
  const error = await handle.result().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  const description = await handle.describe();
  return { error, status: description.status.name, explanation: description.memo?.[EXPLANATION_MEMO] };
}

/** The run ended Cancelled, with an explanation an operator can read; returns it. */
function cancelledWithExplanation(ended: Awaited<ReturnType<typeof ending>>): string {
  expect(ended.status).toBe('CANCELLED');
  expect(ended.error).toBeInstanceOf(WorkflowFailedError);
  expect((ended.error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  expect(typeof ended.explanation).toBe('string');
  return ended.explanation as string;
}

/** The workflow has finished the workflow task that saw the cancel request. */
async function cancelSeen(handle: WorkflowHandle): Promise<void> {
  await waitFor('the cancel request to be handled by a workflow task', async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const requested = events.findIndex(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED,
    );
    if (requested < 0) return undefined;
    const handled = events
      .slice(requested)
      .some((event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    return handled ? true : undefined;
  });
}

// Side by side (issue 38): each test has its own order, the holds and the sandbox's faults are keyed by order,
// and the only sandbox-wide act, releaseHeld, frees no send but the one test's accept-then-hang holds.
describe.concurrent('cancel', () => {
  it('during the claim: the claim is released as not sent, nothing is sent, Cancelled', async () => {
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'claim');
    const handle = await start(orderId);
    await waitFor('the claim to be under way', async () => (hold.entered ? true : undefined));
    await handle.cancel();
    // The run has taken the cancel in while its claim was still running.
    await cancelSeen(handle);
    hold.release();
    await hold.done;

    const ended = await ending(handle);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'not_sent' });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', dispatchedAt: null },
    ]);
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
    expect(cancelledWithExplanation(ended)).toContain('cancelled while claiming');
  });

  it('during a dispatched send held by the provider: the send is waited for and recorded truthfully, one message', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    const handle = await start(orderId);
    await waitFor('the held send to be dispatched', async () =>
      (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
    );
    await handle.cancel();
    await cancelSeen(handle);
    // The run does not abandon the request mid-way: it is still waiting for the provider's answer.
    expect((await handle.describe()).status.name).toBe('RUNNING');
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });
    sandbox.releaseHeld();

    const ended = await ending(handle);
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      providerMessageId: messages[0]!.id,
    });
    const explanation = cancelledWithExplanation(ended);
    expect(explanation).toContain('recorded as sent');
    expect(explanation).toContain(messages[0]!.id);
  });

  it('during the not-sent backoff: the row is already failed, the wait ends, Cancelled', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429, retryAfterSeconds: 600 });
    const handle = await start(orderId);
    await waitFor('the backoff timer to start', async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      return events.some((event) => event.eventType === EventType.EVENT_TYPE_TIMER_STARTED)
        ? true
        : undefined;
    });
    await handle.cancel();

    const ended = await ending(handle);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      httpStatus: 429,
      attempts: 1,
    });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    expect(cancelledWithExplanation(ended)).toContain('waiting to claim again');
  });

  it('during the record: the record completes, the row is settled, one message, Cancelled', async () => {
    const orderId = await createOrder(database.db);
    const hold = holds.holdAt(orderId, 'record');
    const handle = await start(orderId);
    await waitFor('the record to be under way', async () => (hold.entered ? true : undefined));
    await handle.cancel();
    await cancelSeen(handle);
    hold.release();
    await hold.done;

    const ended = await ending(handle);
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      providerMessageId: messages[0]!.id,
    });
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
    expect(cancelledWithExplanation(ended)).toContain('recorded as sent');
  });
});
