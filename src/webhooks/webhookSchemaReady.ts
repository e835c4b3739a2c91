// Before serving, the receiver checks its schema and its role, and refuses to start with a role that could
// read orders or the mail log (migration 0025): docs/production.md, "The webhook receiver".
import { listMigrationFiles, MIGRATIONS_DIRECTORY } from '../db/migrator';
import type { Database } from '../db/pool';
import { WEBHOOK_GROUP_ROLE } from '../db/roles';
import { SchemaNotReadyError } from '../db/schemaReady';

const NEEDED: readonly [table: string, privilege: string][] = [
  ['order_mail_provider_events', 'INSERT'],
  ['order_mail_webhook_deliveries', 'INSERT'],
  ['order_mail_webhook_deliveries', 'DELETE'],
];
const FORBIDDEN: readonly [table: string, privilege: string][] = [
  // The order contract's views (src/db/orderContract.ts) hold what the base tables do.
  ['order_mail_source.orders_for_mail', 'SELECT'],
  ['order_mail_source.order_items_for_mail', 'SELECT'],
  ['orders', 'SELECT'],
  ['order_items', 'SELECT'],
  ['order_mail_log', 'SELECT'],
  ['order_mail_log', 'INSERT'],
  ['order_mail_log', 'UPDATE'],
  ['order_mail_attempts', 'INSERT'],
];

const HINT =
  `Give the receiver a login of its own in ${WEBHOOK_GROUP_ROLE}: WEBHOOK_DATABASE_URL=postgres://… npm run ` +
  'db:roles, then npm run db:migrate (docs/production.md).';

/** Throws SchemaNotReadyError saying what is wrong and what to run; Postgres errors as they come. */
export async function assertWebhookSchemaReady(
  db: Database,
  directory = MIGRATIONS_DIRECTORY,
): Promise<void> {
  const { rows } = await db.query<{ migrations: string | null; user: string }>(
    `SELECT to_regclass('order_mail_schema_migrations')::text AS migrations, session_user AS "user"`,
  );
  const { migrations, user } = rows[0]!;
  if (migrations === null) {
    throw new SchemaNotReadyError(
      'The database has no order mail schema yet, and the webhook receiver runs no migrations. ' +
        'Run them first, as their own step and role: MIGRATION_DATABASE_URL=postgres://… npm run db:migrate.',
    );
  }
  const files = await listMigrationFiles(directory);
  const { rows: applied } = await db.query<{ name: string }>('SELECT name FROM order_mail_schema_migrations');
  const appliedNames = new Set(applied.map((row) => row.name));
  const pending = files.filter((name) => !appliedNames.has(name));
  if (pending.length > 0) {
    throw new SchemaNotReadyError(
      `The database is not migrated to this build: ${pending.join(', ')} not applied yet. The webhook ` +
        'receiver runs no migrations: MIGRATION_DATABASE_URL=postgres://… npm run db:migrate.',
    );
  }
  // has_any_column_privilege: a column-level grant (the workers' on orders) counts as much as a table's.
  const held = async (list: readonly (readonly [string, string])[]) =>
    (
      await db.query<{ table: string; privilege: string; held: boolean }>(
        // A view in a schema the role may not use is one it cannot read (and to_regclass would throw there).
        `SELECT wanted.table_name AS table, wanted.privilege,
                CASE WHEN qualified.schema_name IS NOT NULL
                       AND NOT COALESCE((SELECT has_schema_privilege(n.oid, 'USAGE') FROM pg_namespace AS n
                                          WHERE n.nspname = qualified.schema_name), false)
                     THEN false
                     ELSE to_regclass(wanted.table_name) IS NOT NULL
                          AND (has_table_privilege(wanted.table_name, wanted.privilege)
                               OR (wanted.privilege <> 'DELETE'
                                   AND has_any_column_privilege(wanted.table_name, wanted.privilege)))
                END AS held
           FROM unnest($1::text[], $2::text[]) AS wanted (table_name, privilege),
                LATERAL (SELECT NULLIF(split_part(wanted.table_name, '.', 1), wanted.table_name) AS schema_name)
                  AS qualified`,
        [list.map(([table]) => table), list.map(([, privilege]) => privilege)],
      )
    ).rows;
  // Too much is said first: the workers' login (since 0032) also lacks the receiver's inserts, but what it
  // may read is why it must not serve.
  const tooMuch = (await held(FORBIDDEN)).filter((row) => row.held);
  if (tooMuch.length > 0) {
    throw new SchemaNotReadyError(
      `Database role ${user} may ${tooMuch.map((row) => `${row.privilege} on ${row.table}`).join(', ')}: ` +
        `too much for an internet-facing process, which stores events and nothing else. ${HINT}`,
    );
  }
  const missing = (await held(NEEDED)).filter((row) => !row.held);
  if (missing.length > 0) {
    throw new SchemaNotReadyError(
      `Database role ${user} lacks ${missing.map((row) => `${row.privilege} on ${row.table}`).join(', ')}. ${HINT}`,
    );
  }
}
