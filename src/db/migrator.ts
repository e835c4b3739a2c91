import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, escapeIdentifier } from 'pg';
import { describeCaseStudyTable, type CaseStudyTable } from './caseStudyTable';
import { findMissingPrerequisites, MigrationPrerequisitesError } from './migrationPrerequisites';

/** Plain numbered SQL files, applied in order, never edited once landed (docs/design.md §4). */
export const MIGRATIONS_DIRECTORY = path.join(__dirname, 'migrations');

/** Where an adopted case-study order_mail_log is kept, untouched, after its rows were copied (docs/adoption.md). */
export const CASE_STUDY_TABLE_KEPT_AS = 'order_mail_log_case_study';

// The baseline file that creates order_mail_log; adoption sets the case study's table aside just before it.
const MAIL_LOG_BASELINE = '0003_order_mail_log.sql';

// Any fixed number works; it only has to be the same for every process that migrates this schema.
const MIGRATION_LOCK_KEY = 7_240_531_001;

export interface MigrationReport {
  applied: string[];
  alreadyApplied: string[];
  /** Set when this run adopted the case study's order_mail_log (migrate with `adopt`). */
  adopted: AdoptionReport | null;
}

export interface AdoptionReport {
  /** The case study's rows by state, as they were copied. */
  rows: CaseStudyTable['rows'];
  keptAs: string;
  /** Roles that wrote the case study's table and may go on writing the adopted one (its owner, its grantees). */
  writersGranted: string[];
}

export interface MigrateOptions {
  directory?: string;
  /** Adopt a case-study order_mail_log in one transaction (docs/adoption.md); otherwise it is refused. */
  adopt?: boolean;
  /** What Postgres said along the way (RAISE NOTICE / WARNING from a migration). */
  onNotice?: (message: string) => void;
}

/**
 * The database was migrated with files this build lacks (made before the per-table baseline, or by a newer
 * build): refused, never upgraded or downgraded (docs/design.md §4).
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

/** order_mail_log exists in the case study's shape and was not adopted yet: adoption is a deliberate step. */
export class AdoptionRequiredError extends Error {
  override readonly name = 'AdoptionRequiredError';
  readonly code = 'ERR_ADOPTION_REQUIRED';
  constructor(readonly table: CaseStudyTable) {
    const { sent, failed, sending } = table.rows;
    super(
      `order_mail_log already exists in the case study's shape (order_id, state, attempts, updated_at; ` +
        `${sent} sent, ${failed} failed, ${sending} sending). Nothing was changed. This service adopts it ` +
        'without losing a row, but that is a cut-over step with an order to it (docs/adoption.md): then run ' +
        'npm run db:migrate -- --adopt',
    );
  }
}

/** order_mail_log exists in a shape this service does not know: neither created over nor adopted. */
export class UnknownMailLogTableError extends Error {
  override readonly name = 'UnknownMailLogTableError';
  readonly code = 'ERR_UNKNOWN_MAIL_LOG_TABLE';
  constructor(readonly columns: readonly string[]) {
    super(
      `order_mail_log already exists with columns (${columns.join(', ')}), which is neither this service's ` +
        "table nor the case study's (order_id, state, attempts, updated_at). Nothing was changed. Rename it " +
        'or bring it to the case study shape by hand (docs/adoption.md), then run npm run db:migrate.',
    );
  }
}

/** The migration files of `directory`, in the order they apply. */
export async function listMigrationFiles(directory = MIGRATIONS_DIRECTORY): Promise<string[]> {
  return (await readdir(directory)).filter((name) => /^\d{4}_[a-z0-9_]+\.sql$/.test(name)).sort();
}

/**
 * Applies pending migrations under an advisory lock, each in one transaction with its record row; an
 * adoption runs all of them and the copy in ONE transaction, so old workers never see a half-made table.
 */
export async function migrate(
  connectionString: string,
  options: MigrateOptions = {},
): Promise<MigrationReport> {
  const files = await listMigrationFiles(options.directory);
  const directory = options.directory ?? MIGRATIONS_DIRECTORY;
  const client = new Client({
    connectionString,
    application_name: 'order-mail-migrate',
    connectionTimeoutMillis: 10_000,
  });
  const onNotice = options.onNotice;
  if (onNotice !== undefined)
    client.on('notice', (notice) => onNotice(notice.message ?? 'a notice without a message'));
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    // Read before anything is created: a refusal below must leave the database as it was.
    const { rows: tracked } = await client.query<{ found: string | null }>(
      `SELECT to_regclass('order_mail_schema_migrations')::text AS found`,
    );
    const known =
      tracked[0]?.found == null
        ? { rows: [] }
        : await client.query<{ name: string; checksum: string }>(
            'SELECT name, checksum FROM order_mail_schema_migrations',
          );
    const appliedChecksums = new Map(known.rows.map((row) => [row.name, row.checksum]));
    const foreign = [...appliedChecksums.keys()].filter((name) => !files.includes(name)).sort();
    if (foreign.length > 0) throw new UnknownMigrationsError(foreign);
    const report: MigrationReport = { applied: [], alreadyApplied: [], adopted: null };

    const pending: { name: string; sql: string; checksum: string }[] = [];
    for (const name of files) {
      const sql = await readFile(path.join(directory, name), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      const previous = appliedChecksums.get(name);
      if (previous === undefined) {
        pending.push({ name, sql, checksum });
      } else if (previous !== checksum) {
        throw new Error(`Migration ${name} was edited after it was applied; add a new migration instead.`);
      } else {
        report.alreadyApplied.push(name);
      }
    }

    // On a shop's database the shop's role owns orders (and the case study's order_mail_log): what this login
    // cannot do there is named up front, before anything changes.
    const prerequisites = await findMissingPrerequisites(client, {
      pending: pending.map((file) => file.name),
    });
    if (prerequisites.missing.length > 0) {
      throw new MigrationPrerequisitesError(prerequisites.migrationRole, prerequisites.missing);
    }
    const caseStudy = pending.some((file) => file.name === MAIL_LOG_BASELINE)
      ? await existingMailLog(client)
      : null;
    if (caseStudy !== null && options.adopt !== true) throw new AdoptionRequiredError(caseStudy);
    await client.query(`CREATE TABLE IF NOT EXISTS order_mail_schema_migrations (
      name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);

    const apply = async (file: (typeof pending)[number]): Promise<void> => {
      try {
        await client.query(file.sql);
      } catch (error) {
        throw new Error(
          `Migration ${file.name} failed: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
      await client.query('INSERT INTO order_mail_schema_migrations (name, checksum) VALUES ($1, $2)', [
        file.name,
        file.checksum,
      ]);
      report.applied.push(file.name);
    };

    if (caseStudy === null) {
      for (const file of pending) {
        await client.query('BEGIN');
        try {
          await apply(file);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
      return report;
    }

    await client.query('BEGIN');
    try {
      const writers = await setCaseStudyTableAside(client);
      for (const file of pending) await apply(file);
      // The old workers keep their statements and their role until they are stopped (docs/adoption.md).
      for (const role of writers) {
        await client.query(`GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${escapeIdentifier(role)}`);
      }
      await client.query('COMMIT');
      report.adopted = { rows: caseStudy.rows, keptAs: CASE_STUDY_TABLE_KEPT_AS, writersGranted: writers };
    } catch (error) {
      await client.query('ROLLBACK');
      report.applied = [];
      throw error;
    }
    return report;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

/**
 * An order_mail_log that the baseline would try to create again: the case study's (null when there is none),
 * or a refusal for any other shape.
 */
async function existingMailLog(client: Client): Promise<CaseStudyTable | null> {
  const table = await describeCaseStudyTable(client);
  if (table.kind === 'absent') return null;
  if (table.kind === 'other') throw new UnknownMailLogTableError(table.columns);
  return table;
}

/**
 * Renames the case study's table and its indexes aside under a lock held until adoption commits (0009 copies
 * its rows). Returns the roles that could write it.
 */
async function setCaseStudyTableAside(client: Client): Promise<string[]> {
  await client.query('LOCK TABLE order_mail_log IN ACCESS EXCLUSIVE MODE');
  const { rows: writers } = await client.query<{ role: string }>(
    `SELECT pg_get_userbyid(c.relowner) AS role FROM pg_class AS c WHERE c.oid = 'order_mail_log'::regclass
     UNION
     SELECT pg_get_userbyid(a.grantee) FROM pg_class AS c, aclexplode(c.relacl) AS a
      WHERE c.oid = 'order_mail_log'::regclass AND a.privilege_type IN ('INSERT', 'UPDATE') AND a.grantee <> 0`,
  );
  const { rows: indexes } = await client.query<{ name: string }>(
    `SELECT i.relname AS name FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid
      WHERE x.indrelid = 'order_mail_log'::regclass`,
  );
  for (const { name } of indexes) {
    const kept = (
      name.startsWith('order_mail_log')
        ? CASE_STUDY_TABLE_KEPT_AS + name.slice('order_mail_log'.length)
        : `${name}_case_study`
    ).slice(0, 63);
    await client.query(`ALTER INDEX ${escapeIdentifier(name)} RENAME TO ${escapeIdentifier(kept)}`);
  }
  await client.query(`ALTER TABLE order_mail_log RENAME TO ${escapeIdentifier(CASE_STUDY_TABLE_KEPT_AS)}`);
  return writers.map((row) => row.role).sort();
}
