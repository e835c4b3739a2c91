// A real worker process (src/worker.ts) refuses to start on a broken order contract, naming in one error each
// missing column and column of the wrong type (a missing view and a missing grant, which this superuser login
// cannot lack, are in test/db/orderContract.test.ts); nothing is claimed or sent.
// Real Postgres, Temporal and the sandbox over loopback.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../src/db/orderMailLog';
import { createOrder, openTestDatabase, type TestDatabase } from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';

let database: TestDatabase;
let sandbox: MailSandbox;
let worker: WorkerProcess | undefined;

beforeAll(async () => {
  database = await openTestDatabase('worker_order_contract');
  sandbox = await startMailSandbox();
});
afterAll(async () => {
  if (worker !== undefined) {
    worker.kill('SIGKILL');
    await worker.exited;
  }
  await sandbox?.close();
  await database?.close();
});

it('refuses to start on a broken order contract, naming every problem; nothing is sent', async () => {
  const orderId = await createOrder(database.db);
  // The shop's views gone wrong: the orders view without the recipient and with a text key, the items view
  // without its amounts.
  await database.db.query(
    `DROP VIEW order_mail_source.order_items_for_mail, order_mail_source.orders_for_mail`,
  );
  await database.db.query(`CREATE VIEW order_mail_source.orders_for_mail AS
      SELECT o.id::text AS order_id, o.customer_name, o.ordered_at, o.confirmed_at, o.status,
             0::bigint AS amount_minor, 'JPY'::text AS currency
        FROM orders AS o`);
  await database.db.query(`CREATE VIEW order_mail_source.order_items_for_mail AS
      SELECT order_id, line_no, product_name, quantity FROM order_items`);
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: `worker-order-contract-${orderId}`,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  worker.started.catch(() => undefined);
  expect(await worker.exited, worker.output()).toBe(1);
  const output = worker.output();
  expect(output).toContain("The shop's order contract (schema order_mail_source) is not usable");
  expect(output).toContain('column order_mail_source.orders_for_mail.customer_email is missing (text)');
  expect(output).toContain(
    'column order_mail_source.orders_for_mail.order_id is text; the contract says bigint',
  );
  expect(output).toContain(
    'column order_mail_source.order_items_for_mail.unit_amount_minor is missing (bigint)',
  );
  expect(sandbox.messagesFor(orderId)).toEqual([]);
  expect(await readMailLog(database.db, orderId)).toBeNull();
}, 60_000);
