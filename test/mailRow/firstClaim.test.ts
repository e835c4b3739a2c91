// firstClaim's three answers on real Postgres: a row only for an order the contract's view shows, never a
// second row or a changed one, and 'exists' told apart from 'order-not-found' (src/mailRow/statements.ts). A
// cheaper shape of the statement was tried against these (docs/benchmarks.md, "Our Postgres per statement").
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstClaim, type Claimer } from '../../src/mailRow/statements';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('first_claim');
});

afterAll(async () => {
  await database?.close();
});

const claimer = (orderId: string, run: string): Claimer => ({
  claimToken: `default/${orderId}/${run}`,
  issuedAt: new Date(),
  provider: 'postmark',
  providerChoice: 'first',
});

async function rowsOf(orderId: string): Promise<Record<string, unknown>[]> {
  const { rows } = await database.db.query<Record<string, unknown>>(
    `SELECT * FROM order_mail_log WHERE order_id = $1`,
    [orderId],
  );
  return rows;
}

async function eraseOrder(orderId: string): Promise<void> {
  await database.db.query(`DELETE FROM order_items WHERE order_id = $1`, [orderId]);
  await database.db.query(`DELETE FROM orders WHERE id = $1`, [orderId]);
}

describe('firstClaim', () => {
  it("inserts attempt 1, sending, under the claimer's token and provider, for an order the view shows", async () => {
    const orderId = await createOrder(database.db);
    const claim = claimer(orderId, 'run-1');
    expect(await firstClaim(database.db, orderId, claim)).toBe('inserted');
    const [row, ...more] = await rowsOf(orderId);
    expect(more).toEqual([]);
    expect(row).toMatchObject({
      state: 'sending',
      attempts: 1,
      claim_token: claim.claimToken,
      provider: 'postmark',
      provider_choice: 'first',
      dispatched_at: null,
    });
    expect((row!.claim_issued_at as Date).getTime()).toBe(claim.issuedAt.getTime());
  });

  it('writes nothing for an order the view does not show, and says so', async () => {
    const orderId = String(Number(await createOrder(database.db)) + 1_000_000);
    expect(await firstClaim(database.db, orderId, claimer(orderId, 'run-1'))).toBe('order-not-found');
    expect(await rowsOf(orderId)).toEqual([]);
  });

  it('leaves a row that is there as it is, in any state, and says it exists', async () => {
    for (const state of ['sending', 'sent', 'failed'] as const) {
      const orderId = await createOrder(database.db);
      expect(await firstClaim(database.db, orderId, claimer(orderId, 'run-1'))).toBe('inserted');
      if (state !== 'sending') {
        await database.db.query(
          `UPDATE order_mail_log SET state = $2, outcome = $3, dispatched_at = now() WHERE order_id = $1`,
          [orderId, state, state === 'sent' ? 'accepted' : 'rejected'],
        );
      }
      const before = await rowsOf(orderId);
      expect(await firstClaim(database.db, orderId, claimer(orderId, 'run-2'))).toBe('exists');
      expect(await rowsOf(orderId)).toEqual(before);
    }
  });

  it('says order-not-found for an erased order whose row is there, and leaves the row', async () => {
    const orderId = await createOrder(database.db);
    expect(await firstClaim(database.db, orderId, claimer(orderId, 'run-1'))).toBe('inserted');
    const before = await rowsOf(orderId);
    await eraseOrder(orderId);
    expect(await firstClaim(database.db, orderId, claimer(orderId, 'run-2'))).toBe('order-not-found');
    expect(await rowsOf(orderId)).toEqual(before);
  });

  it('two first claims at once: one inserts, the other finds the row; one row, the winner’s', async () => {
    for (let round = 0; round < 10; round++) {
      const orderId = await createOrder(database.db);
      const claims = [claimer(orderId, 'run-a'), claimer(orderId, 'run-b')];
      const answers = await Promise.all(claims.map((claim) => firstClaim(database.db, orderId, claim)));
      expect([...answers].sort()).toEqual(['exists', 'inserted']);
      const winner = claims[answers.indexOf('inserted')]!;
      const rows = await rowsOf(orderId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ claim_token: winner.claimToken, attempts: 1, state: 'sending' });
    }
  });
});
