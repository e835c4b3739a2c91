// docker-compose.yml's one-shot jobs run shell scripts in the temporalio/admin-tools image. No Docker runs
// here, but the same scripts run natively against the stack's Postgres and server, with the same tools the
// image has (temporal-sql-tool, the temporal CLI, nc) put on PATH: so the compose file's schema setup and
// namespace job are tested for real, twice each, as a restarted `docker compose up` runs them.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadStackSettings, PROJECT_ROOT } from '../../dev/stack/stackSettings';
import { ensureStackTools, type StackTools } from '../../dev/stack/stackTools';
import { startTestStack, type TestStack } from './stackKit';

const run = promisify(execFile);
const SCRIPTS = path.join(PROJECT_ROOT, 'deploy', 'temporal');

let testStack: TestStack;
let tools: StackTools;
let binDirectory: string;

beforeAll(async () => {
  testStack = await startTestStack({ workers: 0, uiPort: null });
  tools = await ensureStackTools(loadStackSettings());
  binDirectory = await mkdtemp(path.join(tmpdir(), 'compose-job-bin-'));
  // The names the admin-tools image gives these tools.
  await symlink(tools.sqlTool, path.join(binDirectory, 'temporal-sql-tool'));
  await symlink(tools.temporalCli, path.join(binDirectory, 'temporal'));
  // `nc -z -w SECONDS HOST PORT`, the only netcat use in the scripts, with bash's /dev/tcp.
  await writeFile(
    path.join(binDirectory, 'nc'),
    '#!/bin/bash\nhost=${@: -2:1}\nport=${@: -1}\nexec 3<>"/dev/tcp/$host/$port"\n',
  );
  await chmod(path.join(binDirectory, 'nc'), 0o755);
});
afterAll(async () => {
  await testStack?.close();
  if (binDirectory !== undefined) await rm(binDirectory, { recursive: true, force: true });
});

async function runScript(script: string, env: Record<string, string>): Promise<string> {
  const { stdout } = await run('/bin/sh', [path.join(SCRIPTS, script)], {
    env: { PATH: `${binDirectory}:${process.env.PATH ?? ''}`, HOME: tmpdir(), ...env },
    timeout: 120_000,
  });
  return stdout;
}

describe("docker-compose.yml's one-shot jobs", () => {
  it("temporal-schema: creates Temporal's databases at the server's schema version, and the app's; again is a no-op", async () => {
    const postgres = new URL(testStack.stack.postgresUrl);
    const env = {
      POSTGRES_SEEDS: postgres.hostname,
      DB_PORT: postgres.port,
      POSTGRES_USER: decodeURIComponent(postgres.username),
      SQL_PASSWORD: decodeURIComponent(postgres.password),
      TEMPORAL_DB_USER: 'compose_temporal_server',
      TEMPORAL_DB_PASSWORD: 'compose-server-5e1b7c93a2',
      TEMPORAL_DB: 'compose_temporal',
      TEMPORAL_VISIBILITY_DB: 'compose_temporal_visibility',
      APP_DB: 'compose_shop',
      TEMPORAL_SCHEMA_DIR: tools.schemaDirectory,
    };
    expect(await runScript('setup-postgres.sh', env)).toContain('schema setup complete');
    expect(await runScript('setup-postgres.sh', env)).toContain('schema setup complete');

    // The same versions the stack's own databases (set up by dev/stack/temporalSchema.ts) are at.
    for (const [composeDatabase, stackDatabase] of [
      ['compose_temporal', 'temporal'],
      ['compose_temporal_visibility', 'temporal_visibility'],
    ] as const) {
      expect(await schemaVersion(composeDatabase)).toBe(await schemaVersion(stackDatabase));
    }
    expect(await databaseExists('compose_shop')).toBe(true);
    // The server's own login owns Temporal's databases and every table in them, and is no superuser.
    for (const database of ['compose_temporal', 'compose_temporal_visibility']) {
      expect(await ownersIn(database)).toEqual(['compose_temporal_server']);
    }
    expect(await isSuperuser('compose_temporal_server')).toBe(false);
  });

  it('temporal-namespace: creates the namespace and registers the search attributes; again is a no-op', async () => {
    const env = {
      TEMPORAL_ADDRESS: testStack.stack.temporalAddress,
      TEMPORAL_NAMESPACE: 'compose-job',
      TEMPORAL_NAMESPACE_RETENTION: '24h',
      TEMPORAL_SEARCH_ATTRIBUTES: 'OrderMailState=Keyword',
    };
    expect(await runScript('create-namespace.sh', env)).toContain('namespace compose-job created');
    expect(await runScript('create-namespace.sh', env)).toContain('namespace compose-job exists');

    const connection = await Connection.connect({ address: testStack.stack.temporalAddress });
    try {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({
        namespace: 'compose-job',
      });
      expect(Object.keys(customAttributes ?? {})).toContain('OrderMailState');
    } finally {
      await connection.close();
    }
  });
});

async function withDatabase<T>(database: string, work: (client: Client) => Promise<T>): Promise<T> {
  const url = new URL(testStack.stack.postgresUrl);
  url.pathname = `/${database}`;
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function schemaVersion(database: string): Promise<string | undefined> {
  return withDatabase(database, async (client) => {
    const { rows } = await client.query<{ curr_version: string }>('SELECT curr_version FROM schema_version');
    return rows[0]?.curr_version;
  });
}

async function databaseExists(database: string): Promise<boolean> {
  return withDatabase('postgres', async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    return (rowCount ?? 0) > 0;
  });
}

/** Who owns the database and its tables, each name once. */
async function ownersIn(database: string): Promise<string[]> {
  return withDatabase(database, async (client) => {
    const { rows } = await client.query<{ owner: string }>(
      `SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = current_database()
       UNION SELECT tableowner FROM pg_tables WHERE schemaname = 'public'`,
    );
    return rows.map((row) => row.owner);
  });
}

async function isSuperuser(role: string): Promise<boolean | undefined> {
  return withDatabase('postgres', async (client) => {
    const { rows } = await client.query<{ rolsuper: boolean }>(
      'SELECT rolsuper FROM pg_roles WHERE rolname = $1',
      [role],
    );
    return rows[0]?.rolsuper;
  });
}
