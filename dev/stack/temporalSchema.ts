// Temporal's two databases on Postgres, created and brought to the server's schema version with
// temporal-sql-tool, exactly as the compose file's admin-tools job does (deploy/temporal/setup-postgres.sh).
// Safe to run again on databases that exist: only update-schema runs then, and it applies what is missing.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';

export interface TemporalSchemaOptions {
  sqlTool: string;
  /** schema/postgresql/v12 of the server's version. */
  schemaDirectory: string;
  /** A URL of the Postgres server whose user may create databases; its database part is ignored. */
  adminUrl: string;
  temporalDatabase: string;
  visibilityDatabase: string;
  log?: (line: string) => void;
}

const run = promisify(execFile);

export async function applyTemporalSchema(options: TemporalSchemaOptions): Promise<void> {
  const targets = [
    { database: options.temporalDatabase, schema: 'temporal' },
    { database: options.visibilityDatabase, schema: 'visibility' },
  ];
  for (const { database, schema } of targets) {
    const sql = sqlToolRunner(options, database);
    if (!(await databaseExists(options.adminUrl, database))) {
      await sql(['create-database']);
    }
    if (!(await hasSchemaVersionTable(options.adminUrl, database))) {
      await sql(['setup-schema', '-v', '0.0']);
    }
    await sql(['update-schema', '-d', path.join(options.schemaDirectory, schema, 'versioned')]);
    options.log?.(`Temporal ${schema} schema ready in database ${database}`);
  }
}

function sqlToolRunner(options: TemporalSchemaOptions, database: string) {
  const url = new URL(options.adminUrl);
  // The password goes in the environment, not on the command line, where `ps` would show it.
  const env = {
    ...process.env,
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: url.hostname,
    SQL_PORT: url.port || '5432',
    SQL_USER: decodeURIComponent(url.username),
    SQL_PASSWORD: decodeURIComponent(url.password),
    SQL_DATABASE: database,
  };
  return async (args: string[]): Promise<void> => {
    try {
      await run(options.sqlTool, args, { env, maxBuffer: 16 * 1024 * 1024 });
    } catch (error) {
      const output = error as { stdout?: string; stderr?: string };
      throw new Error(
        `temporal-sql-tool ${args.join(' ')} on ${database} failed:\n${output.stdout ?? ''}${output.stderr ?? ''}`,
        { cause: error },
      );
    }
  };
}

async function databaseExists(adminUrl: string, database: string): Promise<boolean> {
  return withClient(adminUrl, 'postgres', async (client) => {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    return (rowCount ?? 0) > 0;
  });
}

async function hasSchemaVersionTable(adminUrl: string, database: string): Promise<boolean> {
  return withClient(adminUrl, database, async (client) => {
    const { rows } = await client.query<{ found: string | null }>(
      `SELECT to_regclass('public.schema_version')::text AS found`,
    );
    return rows[0]?.found !== null && rows[0]?.found !== undefined;
  });
}

async function withClient<T>(
  adminUrl: string,
  database: string,
  work: (client: Client) => Promise<T>,
): Promise<T> {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const client = new Client({ connectionString: url.toString(), application_name: 'stack-schema' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
