// Temporal's own Postgres restarts while 100 orders are in flight: their sends are held by the mail API and
// answered while Postgres is down. The app's database is a separate server
// and stays up, as in production, so this is Temporal losing its persistence for a moment: polls, task
// completions and timers fail and are retried. Every order must still end with a terminal row, no order may
// get a second mail, and no row may stay in 'sending'.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startOrderConfirmationMail } from '../../src/client';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../dev/devtools/embeddedPostgres';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createOrder, waitFor } from '../support/testKit';
import { startTestStack, type TestStack } from './stackKit';

const ORDERS = 100;

let appPostgres: EmbeddedPostgresServer;
let testStack: TestStack;
let sandbox: MailSandbox;

beforeAll(async () => {
  appPostgres = await startEmbeddedPostgres();
  testStack = await startTestStack({
    workers: 3,
    uiPort: null,
    appDatabaseUrl: appPostgres.connectionString,
    // The mail API holds every request until the test releases it, so the HTTP deadlines outlast the wait
    // for all 100 to arrive (slow on a busy machine); a deadline that fired would take that send out of
    // flight. As many mail API connections per worker as orders: no send waits for one.
    workerEnv: {
      MAIL_CONNECTIONS: '100',
      MAIL_CONNECT_TIMEOUT_MS: '2000',
      MAIL_HEADERS_TIMEOUT_MS: '120000',
      MAIL_OVERALL_TIMEOUT_MS: '125000',
      SEND_ACTIVITY_TIMEOUT_MS: '130000',
      WORKER_SHUTDOWN_GRACE_MS: '131000',
      SEND_RETRY_INITIAL_MS: '500',
      SEND_RETRY_MAX_MS: '5000',
      SEND_MAX_ATTEMPTS: '20',
    },
  });
  sandbox = testStack.stack.sandbox;
});
afterAll(async () => {
  await testStack?.close();
  await appPostgres?.stop();
});

it(`restarting Temporal's Postgres with ${ORDERS} orders in flight: all terminal, 0 duplicates, 0 sending`, async () => {
  // Every send is held by the mail API (recorded, not yet answered), so all 100 are in flight at once.
  sandbox.setFaultPlan({ rates: [{ fault: { kind: 'accept-then-hang' }, probability: 1 }] });
  const orderIds: string[] = [];
  for (let index = 0; index < ORDERS; index++) orderIds.push(await createOrder(testStack.db));
  await Promise.all(orderIds.map((orderId) => startOrderConfirmationMail(testStack.client, orderId)));
  const startedAt = Date.now();
  await waitFor(
    `all ${ORDERS} sends to be in flight`,
    async () => (sandbox.requests().length >= ORDERS ? true : undefined),
    // 55 s was once too short in CI while other test runs shared the two cores (all arrive in seconds alone).
    115_000,
  );
  const heldForMs = Date.now() - startedAt;

  // While Temporal's Postgres is down, every held send is answered: the workers then report 100 activity
  // completions (and poll for the next tasks) to a server that cannot persist anything.
  let answeredWhileDown = 0;
  await testStack.stack.restartPostgres({
    whileDown: () => {
      sandbox.setFaultPlan({ rates: [] });
      answeredWhileDown = sandbox.releaseHeld();
    },
  });
  expect(answeredWhileDown, `held requests answered while down (all arrived after ${heldForMs} ms)`).toBe(
    ORDERS,
  );

  // The rows are the truth; the workflows are waited for too, so nothing is still moving when we count.
  await waitFor(
    `all ${ORDERS} rows to be terminal`,
    async () => {
      const { rows } = await testStack.db.query<{ pending: number }>(
        `SELECT count(*)::int AS pending FROM orders o
           LEFT JOIN order_mail_log l ON l.order_id = o.id
          WHERE l.state IS NULL OR l.state = 'sending'`,
      );
      return rows[0]?.pending === 0 ? true : undefined;
    },
    240_000,
  );
  await Promise.all(orderIds.map((orderId) => testStack.client.workflow.getHandle(orderId).result()));

  const { rows } = await testStack.db.query<{ orderId: string; state: string; outcome: string }>(
    `SELECT order_id::text AS "orderId", state, outcome FROM order_mail_log ORDER BY order_id`,
  );
  expect(rows).toHaveLength(ORDERS);
  expect(rows.filter((row) => row.state === 'sending')).toEqual([]);
  // assume-sent: an outage can make an outcome unknown, but every order ends sent.
  expect(rows.filter((row) => row.state !== 'sent')).toEqual([]);
  const duplicates = orderIds.filter((orderId) => sandbox.messagesFor(orderId).length > 1);
  expect(duplicates).toEqual([]);
  // An accepted row means the sandbox has its one message; nothing the log calls accepted went missing.
  const missing = rows.filter(
    (row) => row.outcome === 'accepted' && sandbox.messagesFor(row.orderId).length !== 1,
  );
  expect(missing).toEqual([]);
});
