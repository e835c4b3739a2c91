// What a worker checks of its database before it serves (docs/production.md, least privilege); each failure
// is a configuration error of its own, which waiting does not fix.
import { CASE_STUDY_TABLE_KEPT_AS, listMigrationFiles, MIGRATIONS_DIRECTORY } from './migrator';
import type { Database } from './pool';
import { MIGRATION_GROUP_ROLE, SERVICE_GROUP_ROLES, WORKER_GROUP_ROLE } from './roles';

export class SchemaNotReadyError extends Error {
  override readonly name = 'SchemaNotReadyError';
  readonly code = 'ERR_SCHEMA_NOT_READY';
}

const MIGRATE_HINT =
  'Run the migrations first, as their own step and role: MIGRATION_DATABASE_URL=postgres://… npm run db:migrate ' +
  '(docs/production.md).';

// What a worker (its claim, send, record, the sweep) needs, and nothing more.
// The shop's orders are read through the order contract, checked apart (src/db/orderContract.ts).
const NEEDED_PRIVILEGES: readonly [table: string, privileges: readonly string[]][] = [
  ['order_mail_log', ['SELECT', 'INSERT', 'UPDATE']],
  ['order_mail_attempts', ['SELECT', 'INSERT']],
  ['order_mail_late_answers', ['SELECT', 'INSERT']],
  // Acts are the operators' own, under their logins (migration 0057); a worker reads them and records only
  // the resets it observes in Temporal's history.
  ['order_mail_operator_acts', ['SELECT']],
  ['order_mail_observed_resets', ['SELECT', 'INSERT']],
  // Webhook evidence is read only: storing it is the receiver's, under its own role (migration 0032).
  ['order_mail_provider_events', ['SELECT']],
  ['order_mail_reconcile_progress', ['SELECT', 'INSERT', 'UPDATE']],
  // The providers' shared health (migration 0046): counted by the send, read by the claim, set by ops.
  ['order_mail_provider_health', ['SELECT', 'INSERT', 'UPDATE']],
  // Witness probes (migration 0058): recorded at their fence, answered once.
  ['order_mail_witness_probes', ['SELECT', 'INSERT', 'UPDATE']],
  ['order_mail_schema_migrations', ['SELECT']],
];

/** Throws SchemaNotReadyError saying what is missing and what to run; Postgres errors as they come. */
export async function assertSchemaReady(db: Database, directory = MIGRATIONS_DIRECTORY): Promise<void> {
  const { rows: tables } = await db.query<{ migrations: string | null; user: string }>(
    `SELECT to_regclass('order_mail_schema_migrations')::text AS migrations, session_user AS "user"`,
  );
  const { migrations, user } = tables[0]!;
  if (migrations === null) {
    throw new SchemaNotReadyError(`The database has no order mail schema yet. ${MIGRATE_HINT}`);
  }
  const files = await listMigrationFiles(directory);
  const { rows: applied } = await db.query<{ name: string }>('SELECT name FROM order_mail_schema_migrations');
  const appliedNames = new Set(applied.map((row) => row.name));
  // A newer build's migrations are fine: each one adds, so this build's statements still work beside them.
  const pending = files.filter((name) => !appliedNames.has(name));
  if (pending.length > 0) {
    throw new SchemaNotReadyError(
      `The database is not migrated to this build: ${pending.join(', ')} not applied yet. ${MIGRATE_HINT}`,
    );
  }
  await assertServiceWriters(db, user);
  // One privilege per check: has_table_privilege with a list is true when ANY of them is held.
  const wanted = NEEDED_PRIVILEGES.flatMap(([table, privileges]) =>
    privileges.map((privilege) => [table, privilege]),
  );
  const { rows: missing } = await db.query<{ table: string; privilege: string }>(
    `SELECT wanted.table_name AS table, wanted.privilege
       FROM unnest($1::text[], $2::text[]) AS wanted (table_name, privilege)
      WHERE to_regclass(wanted.table_name) IS NULL
         OR NOT has_table_privilege(wanted.table_name, wanted.privilege)`,
    [wanted.map(([table]) => table), wanted.map(([, privilege]) => privilege)],
  );
  const lacks = [...missing.map((need) => `${need.privilege} on ${need.table}`)];
  if (lacks.length > 0) {
    throw new SchemaNotReadyError(
      `Database role ${user} lacks ${lacks.join(', ')}. ` +
        'Grant it the worker role: GRANT order_mail_worker TO ' +
        `${user}; (docs/production.md).`,
    );
  }
}

/**
 * The login must be one the trigger takes for this service's, and no writer of the adopted table may be
 * (docs/design.md "Who is the service").
 */
async function assertServiceWriters(db: Database, user: string): Promise<void> {
  const { rows: me } = await db.query<{ service: boolean }>(
    'SELECT order_mail_is_service_role(session_user) AS service',
  );
  if (me[0]?.service !== true) {
    throw new SchemaNotReadyError(
      `Database login ${user} is not a member of ${WORKER_GROUP_ROLE} by explicit grant (being a superuser or ` +
        "the tables' owner does not count), so order_mail_log's trigger would take this worker's writes for an " +
        `outside writer's. Run the worker as a login in ${WORKER_GROUP_ROLE}: GRANT ${WORKER_GROUP_ROLE} TO ${user}; ` +
        '(docs/production.md).',
    );
  }
  // The adopted table's owner is the migration login after `npm run db:roles` handed it over; otherwise (no
  // hand-over) the owner is the role the old workers ran as.
  const { rows: writers } = await db.query<{ role: string }>(
    `WITH adopted AS (SELECT oid, relowner, relacl FROM pg_class WHERE oid = to_regclass($1)),
          writers AS (
            SELECT relowner AS role FROM adopted
             WHERE NOT EXISTS (SELECT FROM pg_auth_members AS m JOIN pg_roles AS g ON g.oid = m.roleid
                                WHERE g.rolname = $2 AND m.member = adopted.relowner)
            UNION
            SELECT grant_.grantee FROM adopted, aclexplode(adopted.relacl) AS grant_
             WHERE grant_.privilege_type IN ('INSERT', 'UPDATE') AND grant_.grantee <> 0
               AND grant_.grantee <> adopted.relowner)
     SELECT DISTINCT pg_get_userbyid(role) AS role FROM writers
      WHERE order_mail_is_service_role(pg_get_userbyid(role)) ORDER BY 1`,
    [CASE_STUDY_TABLE_KEPT_AS, MIGRATION_GROUP_ROLE],
  );
  if (writers.length > 0) {
    const names = writers.map((row) => row.role).join(', ');
    throw new SchemaNotReadyError(
      `The adopted table ${CASE_STUDY_TABLE_KEPT_AS} is written by ${names}, which order_mail_log's trigger takes ` +
        `for this service (a member of ${SERVICE_GROUP_ROLES.join(', ')}): the case study's old workers, running as ` +
        `it, would move this service's rows and a customer could get a second mail. Run the old workers under a ` +
        `login of their own in none of these groups, and REVOKE the group from ${names} (docs/adoption.md).`,
    );
  }
}
