// A transaction whose connection is ended between two of its statements (a Postgres restart, an operator's
// pg_terminate_backend) fails as a transaction, and the process goes on: pg emits the error on the
// checked-out client, which no pool listener covers, so without one of its own the process ended. The
// webhook receiver's storeDelivery (one transaction per delivery) died this way in a chaos run's Postgres
// restart. Real Postgres: the backend is terminated from a second connection.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDatabase, type Database } from '../../src/db/pool';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let admin: Database;
const logged: string[] = [];

beforeAll(async () => {
  database = await openTestDatabase('transaction_lost');
  admin = createDatabase({ connectionString: database.connectionString, applicationName: 'test admin' });
});

afterAll(async () => {
  await admin?.close();
  await database?.close();
});

it('a backend terminated mid-transaction rejects the transaction, logs the loss, and the pool serves again', async () => {
  const db = createDatabase(
    { connectionString: database.connectionString, applicationName: 'test lost transaction' },
    (message) => logged.push(message),
  );
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown): void => {
    uncaught.push(error);
  };
  process.on('uncaughtException', onUncaught);
  try {
    const outcome = await db
      .transaction(async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
        // Between two statements, as the receiver is between its INSERTs: the FATAL arrives while idle.
        await new Promise((resolve) => setTimeout(resolve, 500));
        await client.query('SELECT 1');
        return 'committed';
      })
      .then(
        (value) => value,
        (error: unknown) => (error instanceof Error ? 'rejected' : 'rejected (not an Error)'),
      );
    expect(outcome).toBe('rejected');
    expect(uncaught).toEqual([]);
    expect(logged.some((message) => /terminating connection/.test(message))).toBe(true);
    // The broken client was not put back: the next transaction gets a working one.
    const again = await db.transaction(
      async (client) => (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0],
    );
    expect(again).toEqual({ one: 1 });
  } finally {
    process.removeListener('uncaughtException', onUncaught);
    await db.close();
  }
});
