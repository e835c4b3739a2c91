// The migration runner on a real Postgres: the v1.0 baseline applies once and a second run is a no-op; a
// database migrated by the pre-1.0 files is refused with a message that says to recreate it, and nothing is
// changed; a baseline file edited after it was applied is refused too.
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { migrate, MIGRATIONS_DIRECTORY, UnknownMigrationsError } from '../../src/db/migrate';
import { createDatabase } from '../../src/db/pool';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';

const BASELINE = [
  '0001_orders.sql',
  '0002_order_items.sql',
  '0003_order_mail_log.sql',
  '0004_order_mail_attempts.sql',
  '0005_order_mail_operator_acts.sql',
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
  it('applies the baseline, one file per table, and a second run is a no-op', async () => {
    expect((await readdir(MIGRATIONS_DIRECTORY)).filter((name) => name.endsWith('.sql')).sort()).toEqual(
      BASELINE,
    );
    const { connectionString } = await freshDatabase();
    expect(await migrate(connectionString)).toEqual({ applied: BASELINE, alreadyApplied: [] });
    expect(await migrate(connectionString)).toEqual({ applied: [], alreadyApplied: BASELINE });
    expect(await tables(connectionString)).toEqual([
      'order_items',
      'order_mail_attempts',
      'order_mail_log',
      'order_mail_operator_acts',
      'order_mail_schema_migrations',
      'orders',
    ]);
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
    for (const name of BASELINE)
      await copyFile(path.join(MIGRATIONS_DIRECTORY, name), path.join(directory, name));
    await migrate(connectionString, { directory });
    await writeFile(path.join(directory, BASELINE[0]!), '-- edited\n', { flag: 'a' });
    await expect(migrate(connectionString, { directory })).rejects.toThrow(/was edited after it was applied/);
  });
});
