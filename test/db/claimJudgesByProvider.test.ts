// Failover review finding: a dispatched orphan is judged by the provider it went to. With
// MAIL_PROVIDERS=resend,postmark an attempt at postmark (no key) must not be "retried under the key" because
// resend, the first provider, has a 24 h window: postmark would send a second mail. Real Postgres; the claim,
// fence and audit trail as the activities run them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import type { ClaimRequest, ProviderJudgement } from '../../src/mailRow/decide';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { IdempotencyRetrySettings } from '../../src/shared/workflowSettings';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

const RESEND_WINDOW: IdempotencyRetrySettings = { windowMs: 24 * 3_600_000, safetyMarginMs: 3_600_000 };
const JUDGEMENTS = new Map<string, ProviderJudgement>([
  ['resend', { idempotency: RESEND_WINDOW, canVerify: false }],
  ['postmark', { idempotency: null, canVerify: false }],
]);

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('claim_by_provider');
});
afterAll(async () => {
  await database?.close();
});

function request(orderId: string, run: number, overrides: Partial<ClaimRequest>): ClaimRequest {
  const workflowScope = `default/${orderId}/`;
  return {
    orderId,
    claimToken: `${workflowScope}run-${run}`,
    workflowScope,
    issuedAt: new Date(Date.UTC(2026, 11, 4) + run * 1_000_000),
    policy: 'assume-failed',
    // The worker's own settings are the first provider's: resend's window.
    idempotency: RESEND_WINDOW,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    byProvider: JUDGEMENTS,
    providers: ['resend', 'postmark'],
    ...overrides,
  };
}

async function dispatchedAtPostmarkThenClosed(): Promise<string> {
  const orderId = await createOrder(database.db);
  // Run 1 when only postmark was configured (or resend was skipped): its attempt goes to postmark.
  const first = await claimOrderMailRow(database.db, request(orderId, 1, { providers: ['postmark'] }));
  expect(first).toMatchObject({ kind: 'claimed', attempt: 1 });
  const dispatch = {
    destination: null,
    sendKey: `order-confirmation/default/${orderId}/0`,
    sendTimeoutMs: 8_000,
  };
  const fenced = await markDispatched(database.db, {
    orderId,
    claimToken: request(orderId, 1, {}).claimToken,
    attempt: 1,
    dispatch,
    provider: 'postmark',
  });
  expect(fenced).toBe('dispatched');
  // Run 1 closed (a reset) before it recorded.
  return orderId;
}

describe('a closed run left an attempt dispatched at postmark; resend is first and has a key', () => {
  it('the next claim settles it by the policy, never as a retry under resend key, and stays with postmark', async () => {
    const orderId = await dispatchedAtPostmarkThenClosed();
    const second = await claimOrderMailRow(database.db, request(orderId, 2, {}));
    expect(second).toMatchObject({ kind: 'claimed', attempt: 2 });
    const attempts = await listAttempts(database.db, orderId);
    expect(attempts[0]).toMatchObject({ attempt: 1, outcome: 'unknown', unknownPolicy: 'assume-failed' });
    // Bound to postmark, where attempt 1 may have been accepted.
    expect((await readMailLog(database.db, orderId))!.provider).toBe('postmark');
  });

  it('with resend unverifiable and postmark verifiable, the orphan is handed back to ask postmark', async () => {
    const orderId = await dispatchedAtPostmarkThenClosed();
    const judgements = new Map<string, ProviderJudgement>([
      ['resend', { idempotency: RESEND_WINDOW, canVerify: false }],
      ['postmark', { idempotency: null, canVerify: true }],
    ]);
    // The worker's own settings are resend's, which cannot be asked: only postmark's judgement lets it ask.
    const second = await claimOrderMailRow(
      database.db,
      request(orderId, 2, { byProvider: judgements, verifyDispatchedOrphans: false }),
    );
    expect(second).toMatchObject({ kind: 'verify-orphan', attempt: 1, provider: 'postmark' });
  });
});
