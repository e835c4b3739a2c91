// The migration runner on a real Postgres: the migrations apply once and a second run is a no-op; 0012
// indexes our orders table but leaves an adopter's alone; a
// database migrated by the pre-1.0 files is refused with a message that says to recreate it, and nothing is
// changed; a file edited after it was applied is refused too; the v1.0 baseline files are the ones released.
import { createHash } from 'node:crypto';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { migrate, MIGRATIONS_DIRECTORY, UnknownMigrationsError } from '../../src/db/migrator';
import { createDatabase } from '../../src/db/pool';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';

// The v1.0 baseline, one file per table, with the sha256 of each as released: immutable from then on.
const BASELINE: Record<string, string> = {
  '0001_orders.sql': '4b604bfc07eee35e90bc60329cbea24170a5a7a3bb0acdbd8259c7e3a6e74c79',
  '0002_order_items.sql': 'd126970ad8b58f65f8c454610c97519d2aad482c08b0a20f0194578b08463e93',
  '0003_order_mail_log.sql': '86a074a46f5570eab712a1e11fc067f79d9f9abf4048931434c9dd2cd6ab342c',
  '0004_order_mail_attempts.sql': '65eadbd7fc79273fb3aa50e06534d91a3d23e431a48191744de95653505d554f',
  '0005_order_mail_operator_acts.sql': 'ac8e39da5272bfd8a138356806a094d30326447220690521ba4f12dcb0c1b290',
};
// Added after v1.0.0 by adoption, each a new file. Other branches add theirs (0006-0007, 0012-0013): the
// tests below take the directory as it is and check that these are in it, in order.
const ADOPTION = [
  '0008_order_mail_late_answers.sql',
  '0009_order_mail_case_study_writers.sql',
  '0010_order_mail_worker_role.sql',
  '0011_order_mail_operator_identity.sql',
];
// Added after v1.0.0 by verification: its provider events and columns.
const VERIFICATION = ['0006_order_mail_provider_events.sql', '0007_order_mail_verification.sql'];
// After the baseline, fixed forward (other branches own 0006-0011; this test does not assume they are absent).
const LATER = [
  '0012_orders_confirmed_index.sql',
  '0013_order_mail_reconcile_progress.sql',
  '0014_order_mail_worker_role_later_tables.sql',
  '0015_order_mail_dispatch_destination.sql',
];
// What a database made before v1.0.0 has in its migrations table.
const PRE_1_0 = [
  '0001_create_orders.sql',
  '0002_create_order_mail_log.sql',
  '0003_add_claim_scheduled_at.sql',
  '0004_allow_idempotent_retry_settlement.sql',
  '0005_operator_acts.sql',
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function freshDatabase(): Promise<IsolatedDatabase> {
  const database = await createIsolatedDatabase(inject('databaseUrl'), 'migrate');
  cleanups.push(() => database.drop());
  return database;
}

async function query<Row extends Record<string, unknown>>(connectionString: string, sql: string) {
  const db = createDatabase({ connectionString, applicationName: 'migrate-test' });
  try {
    return (await db.query<Row>(sql)).rows;
  } finally {
    await db.close();
  }
}

async function tables(connectionString: string): Promise<string[]> {
  const rows = await query<{ name: string }>(
    connectionString,
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
  );
  return rows.map((row) => row.name);
}

describe('migrate', () => {
  it('keeps the v1.0 baseline files exactly as released: later changes are new files', async () => {
    for (const [name, checksum] of Object.entries(BASELINE)) {
      const text = await readFile(path.join(MIGRATIONS_DIRECTORY, name), 'utf8');
      expect(createHash('sha256').update(text).digest('hex'), name).toBe(checksum);
    }
  });

  it('applies every migration in order, and a second run is a no-op', async () => {
    const ALL = (await readdir(MIGRATIONS_DIRECTORY)).filter((name) => name.endsWith('.sql')).sort();
    expect(ALL.slice(0, 5)).toEqual(Object.keys(BASELINE));
    expect(ALL.filter((name) => ADOPTION.includes(name))).toEqual(ADOPTION);
    expect(ALL.filter((name) => VERIFICATION.includes(name))).toEqual(VERIFICATION);
    expect(ALL.filter((name) => LATER.includes(name))).toEqual(LATER);
    const { connectionString } = await freshDatabase();
    expect(await migrate(connectionString)).toEqual({ applied: ALL, alreadyApplied: [], adopted: null });
    expect(await migrate(connectionString)).toEqual({ applied: [], alreadyApplied: ALL, adopted: null });
    expect(await tables(connectionString)).toEqual(
      expect.arrayContaining([
        'order_items',
        'order_mail_attempts',
        'order_mail_late_answers',
        'order_mail_log',
        'order_mail_operator_acts',
        'order_mail_provider_events',
        'order_mail_webhook_deliveries',
        'order_mail_reconcile_progress',
        'order_mail_schema_migrations',
        'orders',
      ]),
    );
  });

  it('refuses a database made by the pre-1.0 migration files, says to recreate it, and changes nothing', async () => {
    const { connectionString } = await freshDatabase();
    await query(
      connectionString,
      `CREATE TABLE order_mail_schema_migrations (
         name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
       INSERT INTO order_mail_schema_migrations (name, checksum)
       VALUES ${PRE_1_0.map((name) => `('${name}', 'pre-1.0')`).join(', ')};`,
    );
    const error = await migrate(connectionString).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(UnknownMigrationsError);
    expect((error as UnknownMigrationsError).unknownNames).toEqual(PRE_1_0);
    expect((error as Error).message).toContain('before v1.0.0');
    expect((error as Error).message).toContain('recreate it');
    expect(await tables(connectionString)).toEqual(['order_mail_schema_migrations']);
  });

  it('refuses a migration edited after it was applied', async () => {
    const { connectionString } = await freshDatabase();
    const directory = await mkdtemp(path.join(tmpdir(), 'migrations-'));
    cleanups.push(() => rm(directory, { recursive: true, force: true }));
    const ALL = (await readdir(MIGRATIONS_DIRECTORY)).filter((name) => name.endsWith('.sql')).sort();
    for (const name of ALL) await copyFile(path.join(MIGRATIONS_DIRECTORY, name), path.join(directory, name));
    await migrate(connectionString, { directory });
    await writeFile(path.join(directory, ALL[0]!), '-- edited\n', { flag: 'a' });
    await expect(migrate(connectionString, { directory })).rejects.toThrow(/was edited after it was applied/);
  });

  describe("0012: the sweep's index on orders", () => {
    const ordersIndexes = async (connectionString: string) =>
      (
        await query<{ name: string }>(
          connectionString,
          `SELECT indexname AS name FROM pg_indexes WHERE tablename = 'orders' ORDER BY 1`,
        )
      ).map((row) => row.name);

    it('is created on the orders table migration 0001 makes', async () => {
      const { connectionString } = await freshDatabase();
      await migrate(connectionString);
      expect(await ordersIndexes(connectionString)).toEqual(['orders_confirmed_at_id_idx', 'orders_pkey']);
    });

    it("leaves an adopter's orders alone: one that has an index on confirmed_at, one without the columns", async () => {
      const indexed = await freshDatabase();
      await query(
        indexed.connectionString,
        `CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_name TEXT NOT NULL, customer_email TEXT NOT NULL,
                              status TEXT NOT NULL, ordered_at TIMESTAMPTZ NOT NULL, confirmed_at TIMESTAMPTZ);
         CREATE INDEX shop_orders_by_confirmation ON orders (confirmed_at)`,
      );
      await migrate(indexed.connectionString);
      expect(await ordersIndexes(indexed.connectionString)).toEqual([
        'orders_pkey',
        'shop_orders_by_confirmation',
      ]);

      const other = await freshDatabase();
      await query(
        other.connectionString,
        `CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_name TEXT NOT NULL, customer_email TEXT NOT NULL,
                              ordered_at TIMESTAMPTZ NOT NULL, paid_at TIMESTAMPTZ)`,
      );
      expect((await migrate(other.connectionString)).applied).toEqual(expect.arrayContaining(LATER));
      expect(await ordersIndexes(other.connectionString)).toEqual(['orders_pkey']);
    });
  });
});
