import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client } from 'pg';

/**
 * Plain numbered SQL files, applied in order and never edited once landed (fix forward with a new file).
 * 0001-0005 are the v1.0 baseline, one file per table.
 */
export const MIGRATIONS_DIRECTORY = path.join(__dirname, 'migrations');

// Any fixed number works; it only has to be the same for every process that migrates this schema.
const MIGRATION_LOCK_KEY = 7_240_531_001;

export interface MigrationReport {
  applied: string[];
  alreadyApplied: string[];
}

/**
 * The database was migrated with files this build does not have. Before v1.0.0 the migrations were rewritten
 * into one baseline per table; nothing had been deployed, so a database made by those earlier files is not
 * upgraded but recreated. A database made by a newer build gets the same refusal (no downgrades).
 */
export class UnknownMigrationsError extends Error {
  override readonly name = 'UnknownMigrationsError';
  readonly code = 'ERR_UNKNOWN_MIGRATIONS';
  constructor(readonly unknownNames: readonly string[]) {
    super(
      `This database was migrated with ${unknownNames.join(', ')}, which this build does not have: it was made ` +
        'by a build from before v1.0.0 (whose migrations were folded into one baseline per table) or by a newer ' +
        'build. Nothing was changed. A pre-1.0 database cannot be upgraded: recreate it (drop the database, or ' +
        'its order_mail_* tables and order_mail_schema_migrations), then run npm run db:migrate.',
    );
  }
}

/**
 * Applies pending migrations. Safe when several workers start at once: they queue on an advisory lock, and
 * each migration runs in its own transaction together with the row that records it.
 */
export async function migrate(
  connectionString: string,
  directory = MIGRATIONS_DIRECTORY,
): Promise<MigrationReport> {
  const files = (await readdir(directory)).filter((name) => /^\d{4}_[a-z0-9_]+\.sql$/.test(name)).sort();
  const client = new Client({
    connectionString,
    application_name: 'order-mail-migrate',
    connectionTimeoutMillis: 10_000,
  });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS order_mail_schema_migrations (
      name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
    const known = await client.query<{ name: string; checksum: string }>(
      'SELECT name, checksum FROM order_mail_schema_migrations',
    );
    const appliedChecksums = new Map(known.rows.map((row) => [row.name, row.checksum]));
    const foreign = [...appliedChecksums.keys()].filter((name) => !files.includes(name)).sort();
    if (foreign.length > 0) throw new UnknownMigrationsError(foreign);
    const report: MigrationReport = { applied: [], alreadyApplied: [] };

    for (const name of files) {
      const sql = await readFile(path.join(directory, name), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const previous = appliedChecksums.get(name);
      if (previous !== undefined) {
        if (previous !== checksum) {
          throw new Error(`Migration ${name} was edited after it was applied; add a new migration instead.`);
        }
        report.alreadyApplied.push(name);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query('INSERT INTO order_mail_schema_migrations (name, checksum) VALUES ($1, $2)', [
          name,
          checksum,
        ]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new Error(
          `Migration ${name} failed: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      report.applied.push(name);
    }
    return report;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}
