// PG_PREPARED_STATEMENTS (src/db/pool.ts): with it on, each parameterised statement of the pool is named, so
// its connection parses and plans it once; the answers are the unnamed ones'; only the first
// PREPARED_STATEMENT_LIMIT texts are named, so dynamic SQL cannot grow a session without bound. Real Postgres: each pool has one connection,
// and pg_prepared_statements, read through it, lists what that session holds.
import type { QueryResultRow } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOrderForMail } from '../../src/db/orders';
import {
  createDatabase,
  PREPARED_STATEMENT_LIMIT,
  preparedStatementName,
  type Database,
} from '../../src/db/pool';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
const opened: Database[] = [];

beforeAll(async () => {
  database = await openTestDatabase('prepared');
});

afterAll(async () => {
  for (const db of opened) await db.close();
  await database?.close();
});

/** A pool of one connection, so every statement runs in the session it then reads. */
function onePool(preparedStatements: boolean): Database {
  const db = createDatabase({
    connectionString: database.connectionString,
    applicationName: `test prepared ${preparedStatements}`,
    maxConnections: 1,
    preparedStatements,
  });
  opened.push(db);
  return db;
}

/** The session's protocol-level prepared statements (not SQL PREPARE ones), by name; itself unnamed. */
async function preparedIn(db: Database): Promise<Map<string, string>> {
  const { rows } = await db.query<{ name: string; statement: string }>(
    'SELECT name, statement FROM pg_prepared_statements WHERE NOT from_sql',
  );
  return new Map(rows.map((row) => [row.name, row.statement]));
}

/** Sends what `db` receives to `db`, keeping the texts. */
function recording(db: Database, texts: string[]): Database {
  return {
    ...db,
    query: <Row extends QueryResultRow>(text: string, params?: readonly unknown[]) => {
      texts.push(text);
      return db.query<Row>(text, params);
    },
  };
}

describe('prepared statements (PG_PREPARED_STATEMENTS)', () => {
  it('on: the order read is named by its text, held by the session, and answers as unnamed', async () => {
    const named = onePool(true);
    const unnamed = onePool(false);
    const orderId = await createOrder(database.db, {});
    const texts: string[] = [];
    const first = await loadOrderForMail(recording(named, texts), orderId);
    const second = await loadOrderForMail(recording(named, texts), orderId);
    expect(first).not.toBeNull();
    expect(second).toEqual(first);
    expect(first).toEqual(await loadOrderForMail(unnamed, orderId));
    expect(await loadOrderForMail(named, '999999999')).toBeNull();

    const [text] = new Set(texts);
    expect(new Set(texts).size).toBe(1);
    const held = await preparedIn(named);
    expect(held.get(preparedStatementName(text!))).toBe(text);
    expect(held.size).toBe(1);
  });

  it('off: nothing is named', async () => {
    const unnamed = onePool(false);
    const orderId = await createOrder(database.db);
    await loadOrderForMail(unnamed, orderId);
    await loadOrderForMail(unnamed, orderId);
    expect(await preparedIn(unnamed)).toEqual(new Map());
  });

  it(`names the first ${PREPARED_STATEMENT_LIMIT} texts of a pool and sends the rest unnamed`, async () => {
    const named = onePool(true);
    const texts = Array.from(
      { length: PREPARED_STATEMENT_LIMIT + 1 },
      (_, index) => `SELECT $1::int + ${index} AS n`,
    );
    for (const [index, text] of texts.entries()) {
      expect((await named.query<{ n: number }>(text, [1])).rows).toEqual([{ n: index + 1 }]);
    }
    // Each again: the named ones stay the same, the last stays unnamed.
    for (const text of texts) await named.query(text, [2]);
    const held = await preparedIn(named);
    expect(held.size).toBe(PREPARED_STATEMENT_LIMIT);
    expect([...held.keys()].sort()).toEqual(
      texts.slice(0, PREPARED_STATEMENT_LIMIT).map(preparedStatementName).sort(),
    );
    expect([...held.values()]).not.toContain(texts[PREPARED_STATEMENT_LIMIT]);
  });

  it('a statement gone from its session fails once (26000), then the pool prepares it again', async () => {
    const named = onePool(true);
    const text = 'SELECT $1::text AS echo';
    expect((await named.query(text, ['a'])).rows).toEqual([{ echo: 'a' }]);
    // As on a pooler's other server connection: the session no longer holds it.
    await named.query('DEALLOCATE ALL');
    await expect(named.query(text, ['b'])).rejects.toMatchObject({ code: '26000' });
    // The failed statement retired its connection: the next one prepares the text again.
    expect((await named.query(text, ['c'])).rows).toEqual([{ echo: 'c' }]);
  });

  it('leaves a text without values unnamed: a simple query, which may hold several statements', async () => {
    const named = onePool(true);
    await named.query('SELECT 1; SELECT 2');
    await named.query('SELECT 3 AS n', []);
    expect(await preparedIn(named)).toEqual(new Map());
  });

  it('names a text by its text alone, within the 63 bytes Postgres keeps of a name', () => {
    const text = 'SELECT 1 WHERE $1::int = 1';
    expect(preparedStatementName(text)).toBe(preparedStatementName(text));
    expect(preparedStatementName(text)).not.toBe(preparedStatementName(`${text} `));
    expect(preparedStatementName(text).length).toBeLessThanOrEqual(63);
  });
});
