// Nothing in the product writes the mail row but src/mailRow/statements.ts, checked where it matters: at the
// pool, for every statement of every test file (test/support/rowWrites.ts, installed by the setup file). This
// file shows that the capture sees and refuses a write from product-like code outside the statements, on the
// pool and on a checked-out client, and lets the statements' writes and a test fixture's through.
import { join, sep } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { firstClaim } from '../../src/mailRow/statements';
import {
  captured,
  installRowWriteCapture,
  judgeWrite,
  productRoots,
  RowWriteOutsideStatementsError,
  STATEMENTS_FILE,
  takeRefused,
} from '../support/rowWrites';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';
import { rogueAuditInTransaction, rogueClaim } from './productLike/rogueWriter';

const PRODUCT_LIKE = join(__dirname, 'productLike') + sep;
let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('statements_only');
});

afterAll(async () => {
  await database?.close();
});

afterEach(() => {
  const index = productRoots.indexOf(PRODUCT_LIKE);
  if (index >= 0) productRoots.splice(index, 1);
});

/** pg's query functions as the capture left them. */
const queryFunctions = (): unknown[] =>
  [pg.Pool.prototype, pg.Client.prototype].map((proto): unknown => Reflect.get(proto, 'query'));

async function rowCount(orderId: string): Promise<number> {
  const { rows } = await database.db.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM order_mail_log WHERE order_id = $1)::int
          + (SELECT count(*) FROM order_mail_attempts WHERE order_id = $1)::int AS n`,
    [orderId],
  );
  return rows[0]!.n;
}

/** A first claim of `orderId` by one run, as the claim activity makes it. */
function claimOf(orderId: string) {
  return { claimToken: `default/${orderId}/run`, issuedAt: new Date(), provider: null, providerChoice: null };
}

describe('every write of the mail row comes from src/mailRow/statements.ts', () => {
  it('refuses a product module that writes the row itself, on the pool, before the statement runs', async () => {
    productRoots.push(PRODUCT_LIKE);
    const orderId = await createOrder(database.db);
    await expect(rogueClaim(database.db, orderId)).rejects.toBeInstanceOf(RowWriteOutsideStatementsError);
    const refused = takeRefused();
    expect(refused).toHaveLength(1);
    expect(refused[0]!.text).toMatch(/INSERT INTO order_mail_log/);
    expect(refused[0]!.refused).toMatch(/test\/mailRow\/productLike\/rogueWriter\.ts/);
    expect(await rowCount(orderId)).toBe(0);
  });

  it('refuses it on a checked-out client (a transaction) too', async () => {
    productRoots.push(PRODUCT_LIKE);
    const orderId = await createOrder(database.db);
    await expect(rogueAuditInTransaction(database.db, orderId)).rejects.toBeInstanceOf(
      RowWriteOutsideStatementsError,
    );
    expect(takeRefused()).toHaveLength(1);
    expect(await rowCount(orderId)).toBe(0);
  });

  it("lets the statements' write through and captures it with its origin", async () => {
    const orderId = await createOrder(database.db);
    const before = captured.length;
    expect(await firstClaim(database.db, orderId, claimOf(orderId))).toBe('inserted');
    const writes = captured.slice(before);
    expect(writes).toHaveLength(1);
    expect(writes[0]!.files).toContain(STATEMENTS_FILE);
    expect(writes[0]!.refused).toBeNull();
    expect(await rowCount(orderId)).toBe(1);
  });

  it("lets a test fixture's direct write through (outside the product)", async () => {
    const orderId = await createOrder(database.db);
    await database.db.query(
      `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at)
       VALUES ($1, 'sending', 1, 'default/fixture/run', now())`,
      [orderId],
    );
    expect(await rowCount(orderId)).toBe(1);
    expect(takeRefused()).toEqual([]);
  });

  it('installed again (the next file in this process, or a second copy of the module): pg wrapped once, nothing carried over', async () => {
    const queries = queryFunctions();
    // A query string makes the module runner evaluate the file a second time.
    const copyPath = '../support/rowWrites?copy';
    const copy = (await import(copyPath)) as typeof import('../support/rowWrites');
    expect(copy.captured).not.toBe(captured);
    copy.installRowWriteCapture();
    try {
      expect(queryFunctions()).toEqual(queries);
      const orderId = await createOrder(database.db);
      expect(await firstClaim(database.db, orderId, claimOf(orderId))).toBe('inserted');
      expect(copy.captured).toHaveLength(1);
    } finally {
      installRowWriteCapture();
    }
    expect(captured).toEqual([]);
  });

  it('judges by the files on the stack: product without the statements file is refused', () => {
    const product = join(__dirname, '..', '..', 'src', 'db', 'someNewWriter.ts');
    expect(judgeWrite([product])).toMatch(/src\/db\/someNewWriter\.ts/);
    expect(judgeWrite([product, STATEMENTS_FILE])).toBeNull();
    expect(judgeWrite([join(__dirname, '..', '..', 'src', 'db', 'pool.ts'), __filename])).toBeNull();
    expect(judgeWrite([])).toMatch(/nobody can say/);
  });
});
