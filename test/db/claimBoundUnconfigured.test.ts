// The claim with a provider removed from MAIL_PROVIDERS (docs/providers.md#draining-a-provider): an order whose
// attempt may have reached mailgun is never claimed by a worker without mailgun, whether that attempt is a
// closed run's dispatched orphan or a failed attempt the policy settled; nothing is written and nothing is
// settled. An attempt known not sent there (a closed run that never dispatched) moves on. Real Postgres; the
// claim, fence and record as the activities run them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import type { ClaimRequest } from '../../src/mailRow/decide';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { recordOutcome } from '../../src/db/orderMailRecord';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('claim_bound_unconfigured');
});
afterAll(async () => {
  await database?.close();
});

function request(orderId: string, run: number, providers: string[], draining: string[] = []): ClaimRequest {
  const workflowScope = `default/${orderId}/`;
  return {
    orderId,
    claimToken: `${workflowScope}run-${run}`,
    workflowScope,
    issuedAt: new Date(Date.UTC(2026, 11, 4) + run * 1_000_000),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    verifyDispatchedOrphans: true,
    providers,
    draining,
  };
}

/** Run 1 claims at mailgun (when it was configured) and, if asked, passes the dispatch fence; then it closes. */
async function claimedAtMailgun(dispatched: boolean): Promise<string> {
  const orderId = await createOrder(database.db);
  const first = await claimOrderMailRow(database.db, request(orderId, 1, ['mailgun']));
  expect(first).toMatchObject({ kind: 'claimed', provider: 'mailgun' });
  if (dispatched) {
    const fenced = await markDispatched(database.db, {
      orderId,
      claimToken: request(orderId, 1, []).claimToken,
      attempt: 1,
      provider: 'mailgun',
      dispatch: {
        destination: null,
        sendKey: `order-confirmation/default/${orderId}/0`,
        sendTimeoutMs: 8_000,
      },
    });
    expect(fenced).toBe('dispatched');
  }
  return orderId;
}

describe('a claim by a worker without the provider the order is bound to', () => {
  it('a dispatched orphan at mailgun: no provider, the row left sending for a worker with mailgun', async () => {
    const orderId = await claimedAtMailgun(true);
    const before = await readMailLog(database.db, orderId);

    const decision = await claimOrderMailRow(database.db, request(orderId, 2, ['postmark', 'ses']));

    expect(decision).toMatchObject({ kind: 'no-provider', provider: 'mailgun' });
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    expect(await listAttempts(database.db, orderId)).toEqual([]);
    // A worker that drains mailgun takes it up: asks mailgun about it before anything else.
    expect(
      await claimOrderMailRow(database.db, request(orderId, 3, ['postmark', 'mailgun'], ['mailgun'])),
    ).toMatchObject({ kind: 'verify-orphan', provider: 'mailgun' });
  });

  it('an unknown at mailgun settled as failed by the policy: no provider, and never reclaimed elsewhere', async () => {
    const orderId = await claimedAtMailgun(true);
    const recorded = await recordOutcome(database.db, {
      orderId,
      claimToken: request(orderId, 1, []).claimToken,
      attempt: 1,
      state: 'failed',
      outcome: 'unknown',
      unknownPolicy: 'assume-failed',
      providerMessageId: null,
      httpStatus: null,
      error: 'connection reset after the request',
      recordedBy: 'test',
      expectDispatched: true,
    });
    expect(recorded).toMatchObject({ kind: 'recorded' });
    const before = await readMailLog(database.db, orderId);

    for (const run of [2, 3]) {
      expect(await claimOrderMailRow(database.db, request(orderId, run, ['postmark']))).toMatchObject({
        kind: 'no-provider',
        provider: 'mailgun',
      });
    }
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    // Draining mailgun: the policy's re-send goes to mailgun, never to postmark.
    expect(
      await claimOrderMailRow(database.db, request(orderId, 4, ['postmark', 'mailgun'], ['mailgun'])),
    ).toMatchObject({ kind: 'claimed', attempt: 2, provider: 'mailgun', providerChoice: 'bound' });
  });

  it('a closed run that never dispatched at mailgun is known not sent: the order moves to a configured provider', async () => {
    const orderId = await claimedAtMailgun(false);
    expect(await claimOrderMailRow(database.db, request(orderId, 2, ['postmark']))).toMatchObject({
      kind: 'claimed',
      attempt: 2,
      provider: 'postmark',
    });
  });
});
