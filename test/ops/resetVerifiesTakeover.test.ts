// A Reset while a send is in flight, with a provider that can be asked afterwards (docs/design.md §4 rule 3,
// §5): the new run's claim finds the orphan dispatched and unrecorded. Settled by the policy,
// that attempt cost a customer's mail (assume-sent, the provider had dropped it) or sent a second one
// (assume-failed, the provider had it). Now the new run asks the provider first, after what is left of the
// settle delay, and settles the attempt with the answer. Real Temporal dev server, real Postgres, the
// sandbox's generic provider over loopback with its lookup; assertions on the messages the sandbox holds,
// the row, its attempts and the runs. Nobody waited for the orphan's send, so the new run asks only once
// its send timeout (8 s here) and the settle delay have passed since that dispatch.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createActivities } from '../../src/activities';
import { createMailTransport } from '../../src/mail/createMailTransport';
import { readMailLog } from '../../src/db/orderMailLog';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { EXPLANATION_MEMO, orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  TEST_MAILGUN_DOMAIN,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import {
  attemptsWithVerification,
  holdingFirstSend,
  rowWithVerification,
  testVerifier,
  withWitness,
} from '../support/verificationKit';
import { startHoldableProxy } from '../chaos/holdableProxy';

const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];

beforeAll(async () => {
  database = await openTestDatabase('reset_verify');
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

/**
 * A worker with verification on. Its first send of `heldOrder` is held after the real send returned (or
 * failed): the row is dispatched and unrecorded until the reset, like a worker that stalled mid-send.
 */
async function verifyingWorker(
  policy: UnknownOutcomePolicy,
  heldOrder: string,
  verification: VerificationSettings = VERIFY,
) {
  const mail = testProviderMailClient('generic', sandbox.url);
  const verifier = testVerifier('generic', sandbox.url, { settings: verification });
  const deps = {
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: policy, verification }),
    verifier: verifier.verifier,
    workerIdentity: `reset-verify-${policy}`,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const real = createActivities(deps);
  const activities = {
    ...real,
    sendOrderMail: holdingFirstSend(real.sendOrderMail, (orderId) => orderId === heldOrder),
  };
  const worker = await startTestWorker(deps, { activities });
  stops.push(
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
  return worker.taskQueue;
}

async function startThenResetMidSend(orderId: string, taskQueue: string) {
  const first = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
  });
  await waitFor('the first send to have gone out', async () =>
    sandbox.requests().some((request) => request.orderId === orderId) ? true : undefined,
  );
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending', attempts: 1 });
  expect((await readMailLog(database.db, orderId))?.dispatchedAt).not.toBeNull();
  const { newRunId } = await resetToFirstWorkflowTask(client, {
    workflowId: orderId,
    runId: first.firstExecutionRunId,
    reason: 'test: reset while the send was in flight',
    identity: 'reset-verify-test',
  });
  return client.workflow.getHandle<typeof orderConfirmationMail>(orderId, newRunId);
}

// Side by side: each test has its own order and worker; a release of held answers only ends requests whose
// worker already discarded them (holdingFirstSend), and another test's accepted send is one more witness.
describe.concurrent(
  'reset while a dispatched send is unrecorded: the new run asks the provider first',
  () => {
    it('the provider has the mail (assume-failed): verified accepted, no second mail', async () => {
      const orderId = await createOrder(database.db);
      const taskQueue = await verifyingWorker('assume-failed', orderId);
      // The provider takes the message and never answers: the first run is stuck between dispatch and record.
      sandbox.queueFault(orderId, { kind: 'accept-then-hang' });

      const run2 = await startThenResetMidSend(orderId, taskQueue);
      const result = await run2.result();
      sandbox.releaseHeld();

      const messages = sandbox.messagesFor(orderId);
      expect(messages).toHaveLength(1);
      expect(result).toMatchObject({ result: 'already-sent', outcome: 'accepted', attempts: 1 });
      expect(await rowWithVerification(database.db, orderId)).toEqual({
        state: 'sent',
        outcome: 'accepted',
        verification: 'lookup',
        providerMessageId: messages[0]!.id,
      });
      const attempts = await attemptsWithVerification(database.db, orderId);
      expect(attempts).toMatchObject([
        {
          attempt: 1,
          state: 'sent',
          outcome: 'accepted',
          unknownPolicy: null,
          verification: 'lookup',
          providerMessageId: messages[0]!.id,
        },
      ]);
      expect(attempts[0]!.error).toMatch(/closed after dispatching; verified accepted/);
    });

    it('the provider dropped it (assume-sent): verified not sent, and the new run sends the one mail', async () => {
      const orderId = await createOrder(database.db);
      const taskQueue = await verifyingWorker('assume-sent', orderId);
      // The provider closes the connection without processing: no message, and the run never records it.
      sandbox.queueFault(orderId, { kind: 'drop-without-processing' });

      const run2 = await startThenResetMidSend(orderId, taskQueue);
      // A later send that got its 2xx, for the lookup's "not found" to count (the freshness witness).
      const result = await withWitness(run2.result(), {
        db: database.db,
        orderId,
        dispatched: () => true,
        sendWitness: async () => {
          const witness = await createOrder(database.db);
          await client.workflow.execute(orderConfirmationMail, {
            workflowId: witness,
            taskQueue,
            args: [witness],
          });
        },
      });

      const messages = sandbox.messagesFor(orderId);
      expect(messages).toHaveLength(1);
      expect(result).toMatchObject({
        result: 'sent',
        outcome: 'accepted',
        attempts: 2,
        providerMessageId: messages[0]!.id,
      });
      const attempts = await attemptsWithVerification(database.db, orderId);
      expect(attempts).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null, verification: 'lookup' },
        { attempt: 2, state: 'sent', outcome: 'accepted', providerMessageId: messages[0]!.id },
      ]);
      expect(attempts[0]!.error).toMatch(/closed after dispatching; verified not sent/);
    });

    it('a cancel while the new run waits to ask: the attempt is left for the sweep to ask, and the run says so', async () => {
      const orderId = await createOrder(database.db);
      const taskQueue = await verifyingWorker('assume-sent', orderId, { ...VERIFY, settleDelayMs: 120_000 });
      sandbox.queueFault(orderId, { kind: 'accept-then-hang' });

      const run2 = await startThenResetMidSend(orderId, taskQueue);
      await waitFor('the new run to wait before asking the provider', async () => {
        const { events } = await run2.fetchHistory();
        return events?.some((event) => event.timerStartedEventAttributes) ? true : undefined;
      });
      await run2.cancel();
      const failure = await run2.result().then(
        () => null,
        (error: unknown) => error,
      );
      sandbox.releaseHeld();

      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
      const described = await run2.describe();
      expect(described.status.name).toBe('CANCELLED');
      expect(String(described.memo?.[EXPLANATION_MEMO])).toMatch(
        /left that attempt as it was: the reconciliation sweep asks the provider/,
      );
      // Not settled by the policy as if asking had failed: still the closed run's, for the sweep to ask about.
      const row = await readMailLog(database.db, orderId);
      expect(row).toMatchObject({ state: 'sending', attempts: 1 });
      expect(row!.claimToken.endsWith(`/${described.runId}`)).toBe(false);
      expect(await attemptsWithVerification(database.db, orderId)).toEqual([]);
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    });

    it('a request still on the wire when the settle delay had passed is not taken for dropped: one mail', async () => {
      // The closed run's request is held between the worker and the provider (a slow network) and lands 2.5 s
      // after its dispatch: past the settle delay (1.2 s), inside its send timeout. Asked at the settle delay,
      // the provider would not know it yet, and the new run would send a second mail.
      const proxy = await startHoldableProxy({ host: '127.0.0.1', port: Number(new URL(sandbox.url).port) });
      stops.push(() => proxy.close());
      const mail = createMailTransport({
        provider: 'generic',
        baseUrl: `http://${proxy.address}`,
        apiKey: 'sandbox-key',
        mailgunDomain: TEST_MAILGUN_DOMAIN,
        postmarkMessageStream: 'outbound',
        connectTimeoutMs: 1_000,
        headersTimeoutMs: 5_000,
        overallTimeoutMs: 6_000,
        connections: 4,
      });
      // The lookup goes the way the send went (through the proxy, released long before it asks): an attempt is
      // asked about where it went, and a worker asking another origin could only say "inconclusive".
      const verifier = testVerifier('generic', `http://${proxy.address}`, { settings: VERIFY });
      const worker = await startTestWorker({
        db: database.db,
        mail,
        settings: testSettings({
          unknownOutcomePolicy: 'assume-failed',
          verification: VERIFY,
          sendTimeoutMs: 12_000,
        }),
        verifier: verifier.verifier,
      });
      stops.push(
        () => worker.stop(),
        () => verifier.close(),
        () => mail.close(),
      );
      const orderId = await createOrder(database.db);
      proxy.hold();
      const first = await client.workflow.start(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue: worker.taskQueue,
        args: [orderId],
      });
      await waitFor('the request to be dispatched and held on the wire', async () =>
        (await readMailLog(database.db, orderId))?.dispatchedAt && proxy.heldBytes() > 0 ? true : undefined,
      );
      const dispatchedAt = (await readMailLog(database.db, orderId))!.dispatchedAt!.getTime();
      const { newRunId } = await resetToFirstWorkflowTask(client, {
        workflowId: orderId,
        runId: first.firstExecutionRunId,
        reason: 'test: reset while the request was on the wire',
        identity: 'reset-verify-test',
      });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, dispatchedAt + 2_500 - Date.now())));
      proxy.release();
      const result = await client.workflow
        .getHandle<typeof orderConfirmationMail>(orderId, newRunId)
        .result();

      const messages = sandbox.messagesFor(orderId);
      expect(messages).toHaveLength(1);
      expect(result).toMatchObject({ result: 'already-sent', outcome: 'accepted' });
      expect(await rowWithVerification(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        verification: 'lookup',
      });
    });
  },
);
