// The model checker's trace for a provider that dedupes by key (Resend): run 1's request under the key was
// dropped after the provider took it and left for a retry under the key; run 1, closed by a Reset, still
// reclaimed late and never dispatched; run 2 takes over more than the key's window after the key's first
// request. Sending under the key then would not be deduped: a second mail. The takeover settles the unknown by
// the policy first, as a failed row's reclaim does. Real Postgres; the rows as the trace leaves them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimRequest, ProviderJudgement } from '../../src/mailRow/decide';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { IdempotencyRetrySettings } from '../../src/shared/workflowSettings';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

const RESEND_WINDOW: IdempotencyRetrySettings = { windowMs: 24 * 3_600_000, safetyMarginMs: 3_600_000 };
const JUDGEMENTS = new Map<string, ProviderJudgement>([
  ['resend', { idempotency: RESEND_WINDOW, canVerify: false }],
]);
const ISSUED = Date.UTC(2026, 11, 4);

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('claim_takeover_key_window');
});
afterAll(async () => {
  await database?.close();
});

const token = (orderId: string, run: number): string => `default/${orderId}/run-${run}`;

function request(orderId: string, run: number, policy: UnknownOutcomePolicy): ClaimRequest {
  return {
    orderId,
    claimToken: token(orderId, run),
    workflowScope: `default/${orderId}/`,
    issuedAt: new Date(ISSUED + run * 1_000_000),
    policy,
    idempotency: RESEND_WINDOW,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    byProvider: JUDGEMENTS,
    providers: ['resend'],
  };
}

/**
 * Attempt 1 dispatched `keyAgeHours` ago and left unknown for a retry under the key; attempt 2, run 1's late
 * reclaim, claimed and never dispatched (run 1 is closed).
 */
async function deferredUnknownWithOrphan(keyAgeHours: number): Promise<string> {
  const orderId = await createOrder(database.db);
  const sent = `now() - make_interval(hours => ${keyAgeHours})`;
  await database.db.query(
    `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                      finished_at, state, outcome, unknown_policy, recorded_by, provider,
                                      provider_choice)
     VALUES ($1::bigint, 1, $2, 0, ${sent}, ${sent}, ${sent}, 'failed', 'unknown', 'idempotent-retry', 'test',
             'resend', 'first')`,
    [orderId, token(orderId, 1)],
  );
  await database.db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, resend_count,
                                 dispatched_at, provider, provider_choice)
     VALUES ($1::bigint, 'sending', 2, $2, $3, 0, NULL, 'resend', 'first')`,
    [orderId, token(orderId, 1), new Date(ISSUED + 1_000_000)],
  );
  return orderId;
}

describe("a closed run's undispatched retry under the key, taken over after the key's window", () => {
  it('assume-failed: the unknown is settled by the policy before a new attempt is claimed', async () => {
    const orderId = await deferredUnknownWithOrphan(26);
    const second = await claimOrderMailRow(database.db, request(orderId, 2, 'assume-failed'));
    // Not 'took-over-undispatched' at attempt 3: that attempt would send under the expired key.
    expect(second).toMatchObject({ kind: 'claimed', attempt: 4, how: 'reclaimed-failed' });
    const attempts = await listAttempts(database.db, orderId);
    expect(attempts.map((a) => [a.attempt, a.state, a.outcome, a.unknownPolicy, a.claimToken])).toEqual([
      [1, 'failed', 'unknown', 'idempotent-retry', token(orderId, 1)],
      [2, 'failed', 'not_sent', null, token(orderId, 1)],
      [3, 'failed', 'unknown', 'assume-failed', token(orderId, 2)],
    ]);
    expect(attempts[2]!.dispatchedAt).toBeNull();
    const row = (await readMailLog(database.db, orderId))!;
    expect(row).toMatchObject({ state: 'sending', attempts: 4, claimToken: token(orderId, 2) });
    expect(row.dispatchedAt).toBeNull();
  });

  it('assume-sent: settled as sent, no attempt claimed, nothing to send', async () => {
    const orderId = await deferredUnknownWithOrphan(26);
    const second = await claimOrderMailRow(database.db, request(orderId, 2, 'assume-sent'));
    expect(second).toEqual({ kind: 'already-sent', outcome: 'unknown', attempts: 3 });
    const attempts = await listAttempts(database.db, orderId);
    expect(attempts.map((a) => [a.attempt, a.state, a.outcome, a.unknownPolicy])).toEqual([
      [1, 'failed', 'unknown', 'idempotent-retry'],
      [2, 'failed', 'not_sent', null],
      [3, 'sent', 'unknown', 'assume-sent'],
    ]);
    const row = (await readMailLog(database.db, orderId))!;
    expect(row).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
      attempts: 3,
    });
    // The settled attempt names the key's first request, which may have been the mail.
    expect(row.dispatchedAt).toEqual(attempts[0]!.dispatchedAt);
  });

  it("inside the key's window the takeover still retries under the key", async () => {
    const orderId = await deferredUnknownWithOrphan(1);
    const second = await claimOrderMailRow(database.db, request(orderId, 2, 'assume-failed'));
    expect(second).toMatchObject({ kind: 'claimed', attempt: 3, how: 'took-over-undispatched' });
    const attempts = await listAttempts(database.db, orderId);
    expect(attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'unknown'],
      [2, 'not_sent'],
    ]);
  });
});
