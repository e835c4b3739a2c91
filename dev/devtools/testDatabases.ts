import { randomBytes } from 'node:crypto';
import { Client, escapeIdentifier } from 'pg';

export interface IsolatedDatabase {
  connectionString: string;
  /** Drops the database, closing any connections a test left open. Safe to call twice. */
  drop(): Promise<void>;
}

// Postgres truncates identifiers at 63 bytes; keep room for the random suffix.
const MAX_PREFIX_LENGTH = 40;

/**
 * Creates a fresh database with a random name on the server behind `adminConnectionString`, so each test
 * file gets its own tables and migrations while the run shares one Postgres. With `template`, a copy of that
 * database (one no session is connected to), e.g. one the run migrated once.
 */
export async function createIsolatedDatabase(
  adminConnectionString: string,
  prefix: string,
  options: { template?: string } = {},
): Promise<IsolatedDatabase> {
  const cleanPrefix = prefix
    .toLowerCase()
    .replace(/[^a-z0-9_]+/g, '_')
    .slice(0, MAX_PREFIX_LENGTH);
  const name = `${cleanPrefix}_${randomBytes(6).toString('hex')}`;
  // CREATE/DROP DATABASE take no parameters, so the (generated, sanitised) name is quoted instead.
  const template = options.template === undefined ? '' : ` TEMPLATE ${escapeIdentifier(options.template)}`;
  await runAdminStatement(adminConnectionString, `CREATE DATABASE ${escapeIdentifier(name)}${template}`);

  const url = new URL(adminConnectionString);
  url.pathname = `/${name}`;
  return {
    connectionString: url.toString(),
    drop: () =>
      runAdminStatement(
        adminConnectionString,
        `DROP DATABASE IF EXISTS ${escapeIdentifier(name)} WITH (FORCE)`,
      ),
  };
}

async function runAdminStatement(connectionString: string, statement: string): Promise<void> {
  const client = new Client({ connectionString, application_name: 'test-databases' });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
