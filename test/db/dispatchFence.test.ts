// The dispatch fence's one statement, on real Postgres, the row made by the claim as the activity runs it. It
// passes only the claim that holds the row: its token at its attempt. And it refuses while an operator holds
// sends (migration 0060): every provider's ('*') or the attempt's own provider's; another provider's hold does
// not stop it, and a lifted hold lets the same attempt pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { readMailLog } from '../../src/db/orderMailLog';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('send_hold_fence');
});
afterAll(async () => {
  await database?.close();
});

async function claimedAt(provider: string) {
  const orderId = await createOrder(database.db);
  const workflowScope = `default/${orderId}/`;
  const claimToken = `${workflowScope}run-1`;
  const claimed = await claimOrderMailRow(database.db, {
    orderId,
    claimToken,
    workflowScope,
    issuedAt: new Date(),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    providers: [provider],
  });
  expect(claimed).toMatchObject({ kind: 'claimed', provider, attempt: 1 });
  /** The fence as an answer naming (token, attempt) would pass it; the holder's own by default. */
  const fence = (as: { claimToken: string; attempt: number } = { claimToken, attempt: 1 }) =>
    markDispatched(database.db, {
      orderId,
      ...as,
      provider,
      dispatch: { destination: null, sendKey: `key-${orderId}`, sendTimeoutMs: 8_000 },
    });
  return { orderId, claimToken, workflowScope, fence };
}

async function hold(scope: string): Promise<void> {
  await database.db.query(`INSERT INTO order_mail_send_holds (scope, reason) VALUES ($1, 'test')`, [scope]);
}
async function lift(scope: string): Promise<void> {
  await database.db.query(`DELETE FROM order_mail_send_holds WHERE scope = $1`, [scope]);
}

describe('the dispatch fence names one claim', () => {
  it("refuses another run's token at the live attempt and the live token at another attempt, and lets the holder pass", async () => {
    const { orderId, claimToken, workflowScope, fence } = await claimedAt('resend');
    // Each on the statement itself: the send activity reads the row before the fence, so only a test here shows
    // that the statement holds on its own.
    for (const wrong of [
      { claimToken: `${workflowScope}run-2`, attempt: 1 },
      { claimToken, attempt: 2 },
      { claimToken, attempt: 0 },
    ]) {
      expect(await fence(wrong), JSON.stringify(wrong)).toBe('claim-lost');
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sending',
        claimToken,
        attempts: 1,
        dispatchedAt: null,
      });
    }
    expect(await fence()).toBe('dispatched');
    expect((await readMailLog(database.db, orderId))?.dispatchedAt).not.toBeNull();
  });
});

describe('the dispatch fence under a hold', () => {
  it('refuses while every provider is held, marks nothing dispatched, and passes once the hold is lifted', async () => {
    const { orderId, fence } = await claimedAt('resend');
    await hold('*');
    try {
      expect(await fence()).toBe('held');
      expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending', dispatchedAt: null });
    } finally {
      await lift('*');
    }
    expect(await fence()).toBe('dispatched');
    expect((await readMailLog(database.db, orderId))?.dispatchedAt).not.toBeNull();
  });

  it("refuses under a hold on the attempt's own provider, not under another provider's", async () => {
    const resend = await claimedAt('resend');
    const postmark = await claimedAt('postmark');
    await hold('resend');
    try {
      expect(await resend.fence()).toBe('held');
      expect(await postmark.fence()).toBe('dispatched');
    } finally {
      await lift('resend');
    }
    expect(await resend.fence()).toBe('dispatched');
  });
});
