// The order contract: the only shape of the shop's orders this service knows, two fixed views the shop writes
// over its tables (docs/design.md §8, docs/adoption.md "The order contract"). Checked at the worker's start.
import type { Database } from './pool';

export const ORDER_SOURCE_SCHEMA = 'order_mail_source';
export const ORDERS_VIEW = 'orders_for_mail';
export const ORDER_ITEMS_VIEW = 'order_items_for_mail';
/** Columns of the orders view named extra_<name> (text) reach the templates as order.extra.<name>. */
export const EXTRA_COLUMN_PREFIX = 'extra_';

/** information_schema.columns.data_type of each column the service reads. */
export const ORDER_CONTRACT = {
  [ORDERS_VIEW]: {
    // The workflow id is the order id: a bigint, and no other id type (docs/adoption.md).
    order_id: 'bigint',
    customer_name: 'text',
    customer_email: 'text',
    ordered_at: 'timestamp with time zone',
    confirmed_at: 'timestamp with time zone',
    // 'confirmed' is the status the sweep mails; any other value is not confirmed.
    status: 'text',
    // The order's amount in the currency's minor unit (yen, cents), and the ISO-4217 code of that currency.
    amount_minor: 'bigint',
    currency: 'text',
  },
  [ORDER_ITEMS_VIEW]: {
    order_id: 'bigint',
    line_no: 'integer',
    product_name: 'text',
    quantity: 'integer',
    unit_amount_minor: 'bigint',
  },
} as const satisfies Record<string, Record<string, string>>;

export class OrderContractError extends Error {
  override readonly name = 'OrderContractError';
  readonly code = 'ERR_ORDER_CONTRACT';
  constructor(readonly problems: readonly string[]) {
    super(
      `The shop's order contract (schema ${ORDER_SOURCE_SCHEMA}) is not usable by this worker; nothing is sent ` +
        `until it is (docs/adoption.md, "The order contract"):\n  - ${problems.join('\n  - ')}`,
    );
  }
}

export interface OrderContract {
  /** The extra_ columns of the orders view, without the prefix: order.extra.<name> in the templates. */
  extras: string[];
}

/** Checks the contract as the worker's login sees it; OrderContractError names each gap. Returns the extras. */
export async function checkOrderContract(db: Database): Promise<OrderContract> {
  const wanted = Object.entries(ORDER_CONTRACT).flatMap(([view, columns]) =>
    Object.entries(columns).map(([column, type]) => ({ view, column, type })),
  );
  // The catalog: information_schema hides columns this login may not use, and a missing grant must be named.
  const { rows } = await db.query<{
    view: string;
    column: string;
    type: string;
    schemaUsage: boolean | null;
    viewExists: boolean;
    found: boolean;
    actualType: string | null;
    granted: boolean | null;
  }>(
    `WITH wanted AS (
       SELECT * FROM unnest($2::text[], $3::text[], $4::text[]) AS w (view_name, column_name, type_name)
     ), relations AS (
       SELECT w.*, (SELECT c.oid FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                     WHERE n.nspname = $1 AND c.relname = w.view_name) AS relation
         FROM wanted AS w
     )
     SELECT r.view_name AS view, r.column_name AS column, r.type_name AS type,
            (SELECT has_schema_privilege(n.oid, 'USAGE') FROM pg_namespace AS n WHERE n.nspname = $1) AS "schemaUsage",
            r.relation IS NOT NULL AS "viewExists",
            a.attname IS NOT NULL AS found,
            format_type(a.atttypid, a.atttypmod) AS "actualType",
            has_column_privilege(r.relation, a.attnum, 'SELECT') AS granted
       FROM relations AS r
       LEFT JOIN pg_attribute AS a
              ON a.attrelid = r.relation AND a.attname = r.column_name AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY r.view_name, r.column_name`,
    [
      ORDER_SOURCE_SCHEMA,
      wanted.map((want) => want.view),
      wanted.map((want) => want.column),
      wanted.map((want) => want.type),
    ],
  );
  const problems: string[] = [];
  const schemaUsage = rows[0]?.schemaUsage ?? null;
  if (schemaUsage === null) problems.push(`schema ${ORDER_SOURCE_SCHEMA} is missing`);
  else if (!schemaUsage) {
    problems.push(
      `missing grant: USAGE on schema ${ORDER_SOURCE_SCHEMA} (GRANT USAGE ON SCHEMA ${ORDER_SOURCE_SCHEMA} TO order_mail_worker)`,
    );
  }
  const missingViews = new Set<string>();
  for (const row of rows) {
    const name = `${ORDER_SOURCE_SCHEMA}.${row.view}`;
    if (!row.viewExists) {
      if (schemaUsage !== null && !missingViews.has(row.view)) problems.push(`view ${name} is missing`);
      missingViews.add(row.view);
    } else if (!row.found) {
      problems.push(`column ${name}.${row.column} is missing (${row.type})`);
    } else {
      if (row.actualType !== null && row.actualType !== row.type) {
        problems.push(`column ${name}.${row.column} is ${row.actualType}; the contract says ${row.type}`);
      }
      if (row.granted === false) {
        problems.push(
          `missing grant: SELECT on ${name}.${row.column} (GRANT SELECT ON ${name} TO order_mail_worker)`,
        );
      }
    }
  }
  const extras = await readExtras(db, problems);
  if (problems.length > 0) throw new OrderContractError(problems);
  return { extras };
}

async function readExtras(db: Database, problems: string[]): Promise<string[]> {
  const { rows } = await db.query<{ column: string; type: string; granted: boolean }>(
    `SELECT a.attname AS column, format_type(a.atttypid, a.atttypmod) AS type,
            has_column_privilege(a.attrelid, a.attnum, 'SELECT') AS granted
       FROM pg_attribute AS a
      WHERE a.attrelid = (SELECT c.oid FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
                           WHERE n.nspname = $1 AND c.relname = $2)
        AND a.attnum > 0 AND NOT a.attisdropped
        AND starts_with(a.attname, $3)
      ORDER BY a.attnum`,
    [ORDER_SOURCE_SCHEMA, ORDERS_VIEW, EXTRA_COLUMN_PREFIX],
  );
  const extras: string[] = [];
  for (const row of rows) {
    const name = `${ORDER_SOURCE_SCHEMA}.${ORDERS_VIEW}.${row.column}`;
    const field = row.column.slice(EXTRA_COLUMN_PREFIX.length);
    if (!/^[a-z][a-z0-9_]*$/.test(field))
      problems.push(`column ${name}: an extra's name must be lower-case letters, digits and _`);
    else if (row.type !== 'text') problems.push(`column ${name} is ${row.type}; an extra is text`);
    else if (!row.granted) problems.push(`missing grant: SELECT on ${name}`);
    else extras.push(field);
  }
  return extras;
}
