// MAIL_SEND_RATE_LIMIT_PER_SECOND: the Temporal server hands out send activities no faster than the limit,
// for the whole task queue. Checked on the facts the sends leave behind (each attempt's dispatched_at, set by
// the dispatch fence right before the HTTP request), as a lower bound on how long N sends must take; never
// as a performance figure.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;

beforeAll(async () => {
  database = await openTestDatabase('send_rate_limit');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
});

afterAll(async () => {
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

it('N sends under a limit of R per second cannot all be dispatched in less than about (N - R) / R seconds', async () => {
  const limit = 2;
  const orders = 12;
  // Two workers on one task queue: the limit is the queue's, not each worker's.
  const workers = [
    await startTestWorker(
      { db: database.db, mail, settings: testSettings() },
      { sendRateLimitPerSecond: limit },
    ),
  ];
  const { taskQueue } = workers[0]!;
  workers.push(
    await startTestWorker(
      { db: database.db, mail, settings: testSettings() },
      { taskQueue, sendRateLimitPerSecond: limit },
    ),
  );
  try {
    const orderIds = await Promise.all(Array.from({ length: orders }, () => createOrder(database.db)));
    const handles = await Promise.all(
      orderIds.map((orderId) =>
        client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
      ),
    );
    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.every((result) => result.result === 'sent')).toBe(true);

    const dispatched = await Promise.all(orderIds.map((orderId) => readMailLog(database.db, orderId)));
    const times = dispatched.map((row) => row!.dispatchedAt!.getTime()).sort((a, b) => a - b);
    const spreadSeconds = (times.at(-1)! - times[0]!) / 1000;
    // A token bucket may let up to `limit` sends through at once; everything after that waits its turn. The
    // spread is measured from the first fence, and a first send that reaches its fence late (a cold worker on
    // a busy machine) shortens it by up to a second's tokens: one more second of slack, so the bound is
    // (N - 2R - 1) / R = 3.5 s for 12 sends at 2/s. Without the limit the 12 sends pass the fence well inside
    // a second, so the check still fails when the limit is not applied.
    const lowerBoundSeconds = (orders - 2 * limit - 1) / limit;
    expect(spreadSeconds).toBeGreaterThanOrEqual(lowerBoundSeconds);
    expect(sandbox.messages()).toHaveLength(orders);
  } finally {
    for (const worker of workers) await worker.stop();
  }
});
