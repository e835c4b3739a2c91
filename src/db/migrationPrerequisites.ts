// What the migration login needs of the shop's own tables before `db:migrate` changes anything: checked first,
// and what is missing comes back as statements for their owner (docs/adoption.md). Skipped where it owns them.
import type { Client } from 'pg';
import { SHOP_TABLES, WORKER_READS_COLUMNS } from './orderColumns';

/** One thing the migration login cannot do itself, and the statement that does it. */
export interface MissingPrerequisite {
  what: string;
  /** Who may run it: the owner of the table (named), or an admin. */
  runBy: string;
  statement: string;
}

export class MigrationPrerequisitesError extends Error {
  override readonly name = 'MigrationPrerequisitesError';
  readonly code = 'ERR_MIGRATION_PREREQUISITES';
  constructor(
    readonly migrationRole: string,
    readonly missing: readonly MissingPrerequisite[],
  ) {
    super(
      `The migration login ${migrationRole} cannot migrate this database yet; nothing was changed. ` +
        'Run these once, as named (docs/adoption.md, "What the shop\'s owner grants"), then npm run db:migrate again:\n' +
        missing.map((item) => `  -- ${item.what}; as ${item.runBy}:\n  ${item.statement}`).join('\n'),
    );
  }
}

// The migrations whose tables have a foreign key to orders (id). 0002 only where order_items is still missing.
const REFERENCING_ORDERS = [
  '0002_order_items.sql',
  '0003_order_mail_log.sql',
  '0004_order_mail_attempts.sql',
  '0005_order_mail_operator_acts.sql',
];
const CONFIRMED_INDEX_MIGRATION = '0012_orders_confirmed_index.sql';
const MAIL_LOG_BASELINE = '0003_order_mail_log.sql';
const COLUMN_GRANTS_MIGRATION = '0030_orders_column_grants.sql';
const WORKER_ROLE = 'order_mail_worker';

interface TableOwner {
  owner: string;
  /** The migration login owns it (directly or as a member of its owner). */
  owned: boolean;
}

async function ownerOf(client: Pick<Client, 'query'>, table: string): Promise<TableOwner | null> {
  const { rows } = await client.query<TableOwner>(
    `SELECT pg_get_userbyid(c.relowner) AS owner, pg_has_role(current_user, c.relowner, 'USAGE') AS owned
       FROM pg_class AS c WHERE c.oid = to_regclass($1)`,
    [table],
  );
  return rows[0] ?? null;
}

const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** What is missing for `pending` to apply; empty when db:migrate may go ahead. */
export async function findMissingPrerequisites(
  client: Pick<Client, 'query'>,
  input: { pending: readonly string[] },
): Promise<{ migrationRole: string; missing: MissingPrerequisite[] }> {
  const { rows: who } = await client.query<{ me: string }>('SELECT current_user AS me');
  const migrationRole = who[0]!.me;
  const missing: MissingPrerequisite[] = [];
  const orders = await ownerOf(client, 'orders');
  const items = await ownerOf(client, 'order_items');

  if (orders !== null && !orders.owned) {
    const needsReferences = input.pending.some(
      (name) => REFERENCING_ORDERS.includes(name) && !(name === '0002_order_items.sql' && items !== null),
    );
    const { rows } = await client.query<{ references: boolean }>(
      `SELECT has_column_privilege('orders', 'id', 'REFERENCES') AS "references"`,
    );
    if (needsReferences && rows[0]?.references !== true) {
      missing.push({
        what: "the mail tables' foreign keys point at orders.id",
        runBy: `${orders.owner}, the owner of orders`,
        statement: `GRANT REFERENCES (id) ON orders TO ${quoteIdentifier(migrationRole)};`,
      });
    }
    if (input.pending.includes(CONFIRMED_INDEX_MIGRATION)) {
      // The same condition as 0012's: it creates the index only where none leads with confirmed_at.
      const { rows: index } = await client.query<{ wanted: boolean }>(
        // pg_attribute, not information_schema: that shows only the columns this login may use.
        `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('orders')
                          AND attname = 'confirmed_at' AND NOT attisdropped)
            AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('orders')
                          AND attname = 'status' AND NOT attisdropped)
            AND NOT EXISTS (SELECT 1 FROM pg_index AS i
                              JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                             WHERE i.indrelid = to_regclass('orders') AND a.attname = 'confirmed_at') AS wanted`,
      );
      if (index[0]?.wanted === true) {
        missing.push({
          what: "the reconciliation sweep's index on orders (migration 0012; only the owner may create it)",
          runBy: `${orders.owner}, the owner of orders`,
          statement:
            "CREATE INDEX CONCURRENTLY orders_confirmed_at_id_idx ON orders (confirmed_at, id) WHERE status = 'confirmed';",
        });
      }
    }
  }

  const { rows: workerRole } = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [WORKER_ROLE]);
  // Checked with the migration that narrows the grant (0030): a later run with nothing pending changes nothing.
  if (workerRole.length > 0 && input.pending.includes(COLUMN_GRANTS_MIGRATION)) {
    for (const table of SHOP_TABLES) {
      const owner = table === 'orders' ? orders : items;
      if (owner === null || owner.owned) continue;
      const { rows } = await client.query<{ column: string; granted: boolean; whole: boolean }>(
        `SELECT a.attname AS column, has_column_privilege($1, $2, a.attname, 'SELECT') AS granted,
                has_table_privilege($1, $2, 'SELECT') AS whole
           FROM pg_attribute AS a
          WHERE a.attrelid = to_regclass($2) AND a.attnum > 0 AND NOT a.attisdropped
            AND a.attname = ANY($3::text[])
          ORDER BY a.attnum`,
        [WORKER_ROLE, table, [...WORKER_READS_COLUMNS[table]]],
      );
      const columns = rows.map((row) => row.column).join(', ');
      const grant = `GRANT SELECT (${columns}) ON ${table} TO ${WORKER_ROLE};`;
      if (rows.some((row) => row.whole)) {
        missing.push({
          what: `${WORKER_ROLE} may read every column of ${table}; it needs only ${columns}`,
          runBy: `${owner.owner}, the owner of ${table}`,
          statement: `REVOKE SELECT ON ${table} FROM ${WORKER_ROLE}; ${grant}`,
        });
      } else if (rows.some((row) => !row.granted)) {
        missing.push({
          what: `the workers read ${columns} of ${table}`,
          runBy: `${owner.owner}, the owner of ${table}`,
          statement: grant,
        });
      }
    }
  }

  if (input.pending.includes(MAIL_LOG_BASELINE)) {
    // The table the baseline would create exists already: the case study's, to adopt. Its rows and shape can
    // only be read, and it can only be renamed, by its owner.
    const log = await ownerOf(client, 'order_mail_log');
    if (log !== null && !log.owned) {
      missing.push({
        what: `adopting renames the case study's order_mail_log, which ${log.owner} owns`,
        runBy:
          'the admin of npm run db:roles, which hands the table over and keeps its owner a writer (or a superuser, by hand)',
        statement:
          `ALTER TABLE order_mail_log OWNER TO ${quoteIdentifier(migrationRole)}; ` +
          `GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${quoteIdentifier(log.owner)};`,
      });
    }
  }
  return { migrationRole, missing };
}
