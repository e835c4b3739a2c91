// A worker refuses to start while open rows are bound to a provider it is not configured for
// (docs/providers.md#draining-a-provider), unless forced with a reason; `ops provider status` counts the same
// rows. Real Postgres; the rows are made by the claim, the dispatch fence and the record as the activities run
// them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import {
  checkNoRowsBoundElsewhere,
  countOpenRowsByProvider,
  countPolicySettledSince,
  ProvidersStillBoundError,
} from '../../src/db/boundProviders';
import type { ClaimRequest } from '../../src/mailRow/decide';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { recordOutcome } from '../../src/db/orderMailRecord';
import type { MailOutcome } from '../../src/shared/mailOutcome';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('bound_providers');
});
afterAll(async () => {
  await database?.close();
});

function request(orderId: string, providers: string[]): ClaimRequest {
  const workflowScope = `default/${orderId}/`;
  return {
    orderId,
    claimToken: `${workflowScope}run-1`,
    workflowScope,
    issuedAt: new Date(Date.UTC(2026, 11, 4)),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    providers,
  };
}

/** One order whose first attempt went to `provider`, dispatched, and (unless left sending) ended `outcome`. */
async function attemptAt(provider: string, outcome: MailOutcome | 'sending'): Promise<string> {
  const orderId = await createOrder(database.db);
  const claim = request(orderId, [provider]);
  expect(await claimOrderMailRow(database.db, claim)).toMatchObject({ kind: 'claimed', provider });
  const sendKey = `order-confirmation/default/${orderId}/0`;
  const fenced = await markDispatched(database.db, {
    orderId,
    claimToken: claim.claimToken,
    attempt: 1,
    provider,
    dispatch: { destination: null, sendKey, sendTimeoutMs: 8_000 },
  });
  expect(fenced).toBe('dispatched');
  if (outcome === 'sending') return orderId;
  const recorded = await recordOutcome(database.db, {
    orderId,
    claimToken: claim.claimToken,
    attempt: 1,
    state: outcome === 'accepted' ? 'sent' : 'failed',
    outcome,
    unknownPolicy: outcome === 'unknown' ? 'assume-failed' : null,
    providerMessageId: null,
    httpStatus: null,
    error: null,
    recordedBy: 'test',
    expectDispatched: true,
  });
  expect(recorded).toMatchObject({ kind: 'recorded' });
  return orderId;
}

describe('rows bound to a provider a worker is not configured for', () => {
  it('refuses to start, naming the provider and its count; starts when forced, returning what it found', async () => {
    await attemptAt('mailgun', 'sending');
    await attemptAt('mailgun', 'rejected');
    await attemptAt('mailgun', 'unknown');
    // Not bound: known not sent, or sent.
    await attemptAt('mailgun', 'not_sent');
    await attemptAt('mailgun', 'accepted');
    await attemptAt('postmark', 'sending');

    expect(await countOpenRowsByProvider(database.db)).toEqual([
      { provider: 'mailgun', sending: 1, failedBound: 2 },
      { provider: 'postmark', sending: 1, failedBound: 0 },
    ]);
    const refusal = await checkNoRowsBoundElsewhere(database.db, ['postmark', 'ses'], null).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ProvidersStillBoundError);
    expect((refusal as Error).message).toContain(
      'mailgun: 3 open row(s) (1 sending, 2 failed and bound to it)',
    );
    expect((refusal as Error).message).not.toContain('postmark:');

    expect(
      await checkNoRowsBoundElsewhere(database.db, ['postmark', 'ses'], 'mailgun account closed'),
    ).toEqual([{ provider: 'mailgun', sending: 1, failedBound: 2 }]);
    // A worker that keeps mailgun (draining or not) starts.
    expect(await checkNoRowsBoundElsewhere(database.db, ['postmark', 'mailgun'], null)).toEqual([]);
  });

  it('counts attempts the policy settled within the lookup retention', async () => {
    const before = new Date(Date.now() - 3_600_000);
    await attemptAt('sendgrid', 'unknown');
    await attemptAt('sendgrid', 'rejected');
    expect(await countPolicySettledSince(database.db, 'sendgrid', before)).toBe(1);
    // Dispatched before the retention began: the lookup no longer remembers it.
    expect(await countPolicySettledSince(database.db, 'sendgrid', new Date(Date.now() + 60_000))).toBe(0);
  });
});
