// The send activity's time before the dispatch fence (src/config/sendTimeBudget.ts): it makes its request only
// when the transport's whole deadline still fits before Temporal's timeout for this execution. A send whose
// timeout leaves no time before the fence gives up at once, as definitely not sent: no fence, no request.
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createActivities, type ClaimResult } from '../../src/activities';
import { SEND_COMPLETION_MARGIN_MS } from '../../src/config/sendTimeBudget';
import { readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { FailureType } from '../../src/shared/failures';
import type { SendNotAccepted } from '../../src/shared/sendOutcome';
import {
  createOrder,
  openTestDatabase,
  testMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;

beforeAll(async () => {
  database = await openTestDatabase('fence_deadline');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
});
afterAll(async () => {
  await mail.close();
  await sandbox.close();
  await database.close();
});

const activities = () =>
  createActivities({
    db: database.db,
    mail,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
    settings: testSettings(),
    workerIdentity: 'fence-deadline-test',
  });

async function claimedOrder(env: MockActivityEnvironment, orderId: string) {
  const claim: ClaimResult = await env.run(activities().claimOrderMail, { orderId, issuedAtMs: Date.now() });
  if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${claim.kind}`);
  return claim;
}

/** The test transport's deadline after the fence (testMailClient: 3 s overall). */
const TRANSPORT_DEADLINE_MS = 3_000;

for (const [what, sendTimeoutMs] of [
  ['leaves exactly no time before the fence', TRANSPORT_DEADLINE_MS + SEND_COMPLETION_MARGIN_MS],
  ['is shorter than the transport deadline', TRANSPORT_DEADLINE_MS - 1_000],
] as const) {
  it(`a send whose timeout ${what}: not sent, no fence, no request`, async () => {
    const orderId = await createOrder(database.db);
    const env = new MockActivityEnvironment({
      namespace: 'default',
      workflowExecution: { workflowId: orderId, runId: `run-${orderId}` },
      scheduledTimestampMs: Date.now(),
      startToCloseTimeoutMs: sendTimeoutMs,
    });
    const claim = await claimedOrder(env, orderId);
    const error = await env
      .run(activities().sendOrderMail, {
        orderId,
        claimToken: claim.claimToken,
        attempt: claim.attempt,
        idempotencyKey: claim.idempotencyKey,
      })
      .then(
        () => undefined,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(FailureType.MailNotSent);
    expect((error as ApplicationFailure).details?.[0] as SendNotAccepted).toMatchObject({
      outcome: 'not_sent',
      errorCode: 'FENCE_DEADLINE',
      retryable: true,
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending', dispatchedAt: null });
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toEqual([]);
  });
}
