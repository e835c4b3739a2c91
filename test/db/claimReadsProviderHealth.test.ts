// The claim reads the providers' shared health only when there is a choice to make: with one provider every
// answer of the failover rule is that provider, so the read would be one statement per order for nothing.
// Real Postgres; the statements are the ones the claim sends, seen through the Database it is given.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClaimRequest } from '../../src/mailRow/decide';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import type { Database } from '../../src/db/pool';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
beforeAll(async () => {
  database = await openTestDatabase('claim_reads_health');
  // An operator skipped postmark: with a choice to make, the claim passes it over.
  await database.db.query(
    `INSERT INTO order_mail_provider_health (provider, operator_mode) VALUES ('postmark', 'skipped')`,
  );
});
afterAll(async () => {
  await database?.close();
});

/** The database, with every statement sent through it (outside a transaction's client) kept in `seen`. */
function watched(db: Database, seen: string[]): Database {
  return {
    ...db,
    query(text, params) {
      seen.push(text);
      return db.query(text, params);
    },
  };
}

async function claimWith(providers: string[]): Promise<{ statements: string[]; provider: unknown }> {
  const orderId = await createOrder(database.db);
  const workflowScope = `default/${orderId}/`;
  const request: ClaimRequest = {
    orderId,
    claimToken: `${workflowScope}run-1`,
    workflowScope,
    issuedAt: new Date(),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    providers,
  };
  const statements: string[] = [];
  const claimed = await claimOrderMailRow(watched(database.db, statements), request);
  expect(claimed).toMatchObject({ kind: 'claimed', attempt: 1 });
  const { rows } = await database.db.query('SELECT provider FROM order_mail_log WHERE order_id = $1', [
    orderId,
  ]);
  return { statements, provider: rows[0]?.provider };
}

const readsHealth = (statements: string[]): number =>
  statements.filter((text) => text.includes('order_mail_provider_health')).length;

describe('the claim and the providers health', () => {
  it('with one provider, claims for it without reading the health', async () => {
    const { statements, provider } = await claimWith(['postmark']);
    expect(provider).toBe('postmark');
    expect(statements.length).toBeGreaterThan(0);
    expect(readsHealth(statements)).toBe(0);
  });
  it('with two, reads it once and follows it', async () => {
    const { statements, provider } = await claimWith(['postmark', 'mailgun']);
    expect(readsHealth(statements)).toBe(1);
    expect(provider).toBe('mailgun');
  });
});
