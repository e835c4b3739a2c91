// After a Reset, the new run replays to the reset point and may redo a step of an attempt the closed run had
// already moved past: here, the record of an attempt that was not sent (a 429), while the row is held by the
// closed run's NEXT claim, never dispatched. Ending the new run 'claim-lost' (Completed) there would leave the
// sweep to release the closed run's claim later, with nobody left to send: a customer without a mail (seen in
// CI's operator chaos, before the run claimed again). The row as the reset leaves it is laid out here directly, with the real workflow,
// Postgres and the sandbox; the run must claim again, take the orphan over and send once. The
// same when the attempt's send ended unknown before its fence (CI met that too: decided not sent).
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities, type ActivityDependencies } from '../../src/activities';
import { claimTokenOf } from '../../src/db/claimToken';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { recordOutcome } from '../../src/db/orderMailRecord';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { notAcceptedOutcome, sendFailure } from '../../src/shared/sendOutcome';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { ActivityHolds } from '../support/heldActivities';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;
const holds = new ActivityHolds();
/** Orders whose first send ends unknown without ever passing the dispatch fence (no request was made). */
const unknownBeforeTheFence = new Set<string>();

beforeAll(async () => {
  database = await openTestDatabase('lostheld');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  const deps: ActivityDependencies = {
    db: database.db,
    mail,
    settings: testSettings(),
    workerIdentity: 'lost-while-held-test',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const real = createActivities(deps);
  worker = await startTestWorker(deps, {
    activities: holds.wrap({
      ...real,
      // As when the send's activity was reset, or timed out, before its fence: the send says "unknown", and
      // the row, never dispatched, proves no request was made.
      sendOrderMail: (input) => {
        if (!unknownBeforeTheFence.delete(input.orderId)) return real.sendOrderMail(input);
        return Promise.reject(
          sendFailure(
            notAcceptedOutcome({
              outcome: 'unknown',
              httpStatus: null,
              errorCode: null,
              reason: 'test: the send ended before its dispatch fence, its outcome unknown to it',
            }),
          ),
        );
      },
    }),
  });
});

afterAll(async () => {
  holds.releaseAll();
  await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

/**
 * A new order whose first attempt sends nothing (a 429; or, with `unknownBeforeFence`, a send that ends
 * unknown before its fence), its run started and held as it records that attempt.
 */
async function startRefusedThenHeldAtRecord(how: 'refused' | 'unknownBeforeFence' = 'refused') {
  const orderId = await createOrder(database.db);
  if (how === 'refused') sandbox.queueFault(orderId, { kind: 'status', status: 429 });
  else unknownBeforeTheFence.add(orderId);
  const hold = holds.holdAt(orderId, 'record');
  const handle = await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: worker.taskQueue,
    args: [orderId],
  });
  await waitFor('the record of the refused attempt to be under way', async () =>
    hold.entered ? true : undefined,
  );
  return { orderId, hold, handle };
}

/**
 * The row as a closed run leaves it when it had recorded attempt 1 and claimed attempt 2 before a reset
 * terminated it: attempt 1 failed/not_sent (its audit row written), attempt 2 'sending' under that run's
 * token, never dispatched, claimed before anything this run does next.
 */
async function layClosedRunsNextClaim(orderId: string): Promise<string> {
  const row = await readMailLog(database.db, orderId);
  expect(row).toMatchObject({ state: 'sending', attempts: 1 });
  const recorded = await recordOutcome(database.db, {
    orderId,
    claimToken: row!.claimToken,
    attempt: 1,
    state: 'failed',
    outcome: 'not_sent',
    unknownPolicy: null,
    providerMessageId: null,
    httpStatus: 429,
    error: 'HTTP 429 (recorded by the closed run)',
    recordedBy: 'the closed run',
    expectDispatched: null,
  });
  expect(recorded.kind).toBe('recorded');
  const closedRunToken = claimTokenOf('default', orderId, 'closed-run-before-the-reset');
  await database.db.query(
    `UPDATE order_mail_log
        SET state = 'sending', attempts = 2, claim_token = $2, claim_issued_at = now() - interval '1 hour',
            claimed_at = now(), dispatched_at = NULL, outcome = NULL, unknown_policy = NULL, updated_at = now()
      WHERE order_id = $1`,
    [orderId, closedRunToken],
  );
  return closedRunToken;
}

it('an attempt that sent nothing finds the row held by a closed run: the run claims again and sends once', async () => {
  const { orderId, hold, handle } = await startRefusedThenHeldAtRecord();
  const closedRunToken = await layClosedRunsNextClaim(orderId);
  hold.release();

  expect(await handle.result()).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 3 });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  expect(await readMailLog(database.db, orderId)).toMatchObject({
    state: 'sent',
    outcome: 'accepted',
    attempts: 3,
  });
  const attempts = await listAttempts(database.db, orderId);
  expect(attempts.map(({ attempt, state, outcome }) => ({ attempt, state, outcome }))).toEqual([
    { attempt: 1, state: 'failed', outcome: 'not_sent' },
    // The closed run's claim, taken over without a request.
    { attempt: 2, state: 'failed', outcome: 'not_sent' },
    { attempt: 3, state: 'sent', outcome: 'accepted' },
  ]);
  expect(attempts[1]!.claimToken).toBe(closedRunToken);
});

it('so does an attempt whose send ended unknown before its fence (decided not sent): it claims again, one mail', async () => {
  const { orderId, hold, handle } = await startRefusedThenHeldAtRecord('unknownBeforeFence');
  await layClosedRunsNextClaim(orderId);
  hold.release();

  expect(await handle.result()).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 3 });
  // The unknown send made no request; the one message is the new claim's.
  expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(1);
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', attempts: 3 });
});

it('a row settled by someone else meanwhile (an operator) still ends the run, with no request', async () => {
  const { orderId, hold, handle } = await startRefusedThenHeldAtRecord();
  await layClosedRunsNextClaim(orderId);
  // Then settled, as an operator's resolve would: nothing holds the row any more.
  await database.db.query(
    `UPDATE order_mail_log SET state = 'failed', outcome = 'resolved', updated_at = now() WHERE order_id = $1`,
    [orderId],
  );
  hold.release();

  expect(await handle.result()).toMatchObject({ result: 'claim-lost' });
  // Only the refused request: the run did not claim again.
  expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(1);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'resolved' });
});
