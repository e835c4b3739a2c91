// The order contract as the worker's login sees it (src/db/orderContract.ts): a missing view, a missing column,
// a column of the wrong type and a missing grant are each named, all in one error; extra_ columns become the
// templates' order.extra fields. Real Postgres, the roles of least privilege, the demo's views (migration 0063).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator';
import { checkOrderContract, OrderContractError } from '../../src/db/orderContract';
import { createDatabase, type Database } from '../../src/db/pool';
import { openLeastPrivilegeDatabase, type LeastPrivilegeDatabase } from '../support/testKit';

let database: LeastPrivilegeDatabase;
let worker: Database;

const ITEMS_VIEW = `CREATE VIEW order_mail_source.order_items_for_mail AS
  SELECT order_id, line_no, product_name, quantity, unit_price_yen AS unit_amount_minor FROM order_items`;

/** The demo's orders view with `columns` in place of its own (each `expression AS name`). */
function ordersView(columns: Record<string, string> = {}): string {
  const all: Record<string, string> = {
    order_id: 'o.id',
    customer_name: 'o.customer_name',
    customer_email: 'o.customer_email',
    ordered_at: 'o.ordered_at',
    confirmed_at: 'o.confirmed_at',
    status: 'o.status',
    amount_minor: '0::bigint',
    currency: `'JPY'::text`,
    ...columns,
  };
  const select = Object.entries(all)
    .filter(([, expression]) => expression !== '')
    .map(([name, expression]) => `${expression} AS ${name}`)
    .join(', ');
  return `CREATE VIEW order_mail_source.orders_for_mail AS SELECT ${select} FROM orders AS o`;
}

/** Replaces the contract's views as the shop would, and grants them to the workers. */
async function provide(orders: string, items: string | null = ITEMS_VIEW): Promise<void> {
  await database.admin.query(
    'DROP VIEW IF EXISTS order_mail_source.orders_for_mail, order_mail_source.order_items_for_mail',
  );
  await database.admin.query(orders);
  if (items !== null) await database.admin.query(items);
  await database.admin.query('GRANT USAGE ON SCHEMA order_mail_source TO order_mail_worker');
  await database.admin.query('GRANT SELECT ON ALL TABLES IN SCHEMA order_mail_source TO order_mail_worker');
}

async function problems(): Promise<readonly string[]> {
  const error = await checkOrderContract(worker).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(OrderContractError);
  return (error as OrderContractError).problems;
}

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('order_contract');
  await migrate(database.migrationUrl);
  worker = createDatabase({ connectionString: database.workerUrl, applicationName: 'test worker login' });
});
afterAll(async () => {
  await worker?.close();
  await database?.close();
});
beforeEach(async () => {
  await provide(ordersView());
});

describe('the order contract, checked with the worker login', () => {
  it('is met by the demo provider: no extras', async () => {
    expect(await checkOrderContract(worker)).toEqual({ extras: [] });
  });

  it('names a missing view', async () => {
    await provide(ordersView(), null);
    expect(await problems()).toEqual(['view order_mail_source.order_items_for_mail is missing']);
  });

  it('names a missing column', async () => {
    await provide(ordersView({ customer_email: '' }));
    expect(await problems()).toEqual([
      'column order_mail_source.orders_for_mail.customer_email is missing (text)',
    ]);
  });

  it('names a column of the wrong type', async () => {
    await provide(ordersView({ order_id: 'o.id::text', amount_minor: '0::numeric' }));
    expect(await problems()).toEqual([
      'column order_mail_source.orders_for_mail.amount_minor is numeric; the contract says bigint',
      'column order_mail_source.orders_for_mail.order_id is text; the contract says bigint',
    ]);
  });

  it('names a missing grant, on a view and on the schema', async () => {
    await database.admin.query(
      'REVOKE SELECT ON order_mail_source.order_items_for_mail FROM order_mail_worker',
    );
    const missing = await problems();
    expect(missing).toHaveLength(5);
    expect(missing).toContain(
      'missing grant: SELECT on order_mail_source.order_items_for_mail.quantity (GRANT SELECT ON order_mail_source.order_items_for_mail TO order_mail_worker)',
    );
    await database.admin.query('REVOKE USAGE ON SCHEMA order_mail_source FROM order_mail_worker');
    expect(await problems()).toContain(
      'missing grant: USAGE on schema order_mail_source (GRANT USAGE ON SCHEMA order_mail_source TO order_mail_worker)',
    );
  });

  it('names every problem in one error', async () => {
    await provide(ordersView({ order_id: 'o.id::text', currency: '' }), null);
    expect(await problems()).toEqual([
      'view order_mail_source.order_items_for_mail is missing',
      'column order_mail_source.orders_for_mail.currency is missing (text)',
      'column order_mail_source.orders_for_mail.order_id is text; the contract says bigint',
    ]);
  });

  it('takes text columns named extra_<name> as the templates’ order.extra fields, and refuses others', async () => {
    await provide(ordersView({ extra_gift_message: `'x'::text` }));
    expect(await checkOrderContract(worker)).toEqual({ extras: ['gift_message'] });
    await provide(ordersView({ extra_gift_message: `'x'::text`, extra_points: '1' }));
    expect(await problems()).toEqual([
      'column order_mail_source.orders_for_mail.extra_points is integer; an extra is text',
    ]);
  });
});
