// Orders that cannot be mailed as they are: a recipient that is not exactly one plain address, or an order
// larger than the limits. Each is refused before the dispatch fence, for good: the workflow fails red with
// MailRefused, the row says failed/rejected after ONE attempt, and no request reaches the provider or the
// relay (a comma list must never become two recipients). Real Temporal, Postgres, HTTP and SMTP sandboxes.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailSizeLimits } from '../../src/mail/mailSizeLimits';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { FailureType } from '../../src/shared/failures';
import type { SendNotAccepted } from '../../src/shared/sendOutcome';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  testSmtpTransport,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const SMALL_LIMITS: MailSizeLimits = { maxOrderItems: 50, maxRenderedBytes: 40_000 };

let database: TestDatabase;
let sandbox: MailSandbox;
let relay: SmtpSandbox;
let client: Client;
const transports: MailTransport[] = [];
let httpWorker: RunningTestWorker;
let smtpWorker: RunningTestWorker;
let defaultLimitsWorker: RunningTestWorker;

beforeAll(async () => {
  database = await openTestDatabase('refused');
  sandbox = await startMailSandbox();
  relay = await startSmtpSandbox();
  client = await connectTestClient();
  const http = testMailClient(sandbox.url);
  const smtp = testSmtpTransport(relay.port);
  transports.push(http, smtp);
  const settings = testSettings();
  httpWorker = await startTestWorker({ db: database.db, mail: http, settings, mailLimits: SMALL_LIMITS });
  smtpWorker = await startTestWorker({ db: database.db, mail: smtp, settings, mailLimits: SMALL_LIMITS });
  // As deployed: no limits given, the defaults apply.
  defaultLimitsWorker = await startTestWorker({ db: database.db, mail: http, settings });
}, 120_000);

afterAll(async () => {
  for (const worker of [httpWorker, smtpWorker, defaultLimitsWorker]) await worker?.stop();
  await client.connection.close();
  for (const transport of transports) await transport.close();
  await relay.close();
  await sandbox.close();
  await database.close();
});

async function failureOf(orderId: string, worker: RunningTestWorker): Promise<ApplicationFailure> {
  const error = await client.workflow
    .execute(orderConfirmationMail, { workflowId: orderId, taskQueue: worker.taskQueue, args: [orderId] })
    .then(
      () => undefined,
      (caught: unknown) => caught,
    );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  return (error as WorkflowFailedError).cause as ApplicationFailure;
}

/** Refused for good after one attempt, nothing sent, and the row and the failure say why. */
async function expectRefused(orderId: string, failure: ApplicationFailure, errorCode: string) {
  expect(failure.type).toBe(FailureType.MailRefused);
  expect(failure.message).toContain(`Order ${orderId}`);
  expect(failure.message).toMatch(/refused before sending/);
  expect((failure.details?.[0] as SendNotAccepted).errorCode).toBe(errorCode);
  expect(await readMailLog(database.db, orderId)).toMatchObject({
    state: 'failed',
    outcome: 'rejected',
    attempts: 1,
    dispatchedAt: null,
    httpStatus: null,
  });
  expect(await listAttempts(database.db, orderId)).toMatchObject([
    { attempt: 1, state: 'failed', outcome: 'rejected', dispatchedAt: null },
  ]);
}

const BAD_ADDRESSES: [string, string][] = [
  ['a comma list', 'taro@example.com, hanako@example.com'],
  ['a CRLF header injection', 'taro@example.com\r\nBcc: everyone@example.com'],
  ['a display-name mailbox', 'Taro Yamada <taro@example.com>'],
  ['an overlong address', `${'t'.repeat(60)}@${'x'.repeat(200)}.example.com`],
];

describe('a recipient that is not exactly one plain address', () => {
  for (const [what, address] of BAD_ADDRESSES) {
    it(`over HTTP, ${what}: refused, no request made, not retried`, async () => {
      const orderId = await createOrder(database.db, { customerEmail: address });
      const failure = await failureOf(orderId, httpWorker);
      await expectRefused(orderId, failure, 'INVALID_RECIPIENT');
      expect(sandbox.requests().filter((request) => request.orderId === orderId)).toEqual([]);
      // The address is personal data: the failure names the column, never the value.
      expect(failure.message).toContain('customer_email');
      expect(failure.message).not.toContain(address.slice(0, 8));
    });

    it(`over SMTP, ${what}: refused, no transaction at the relay, not retried`, async () => {
      const orderId = await createOrder(database.db, { customerEmail: address });
      await expectRefused(orderId, await failureOf(orderId, smtpWorker), 'INVALID_RECIPIENT');
      expect(relay.transactionsFor(orderId)).toEqual([]);
      expect(relay.messagesFor(orderId)).toEqual([]);
    });
  }
});

describe('an order larger than the limits', () => {
  async function addItems(orderId: string, count: number, nameBytes = 10): Promise<void> {
    await database.db.query(
      `INSERT INTO order_items (order_id, line_no, product_name, quantity, unit_price_yen)
       SELECT $1, 100 + g, repeat('x', $3) || g, 1, 100 FROM generate_series(1, $2) AS g`,
      [orderId, count, nameBytes],
    );
  }

  it('more items than MAIL_MAX_ORDER_ITEMS: refused before rendering, nothing sent', async () => {
    const orderId = await createOrder(database.db);
    await addItems(orderId, SMALL_LIMITS.maxOrderItems - 1);
    await expectRefused(orderId, await failureOf(orderId, httpWorker), 'ORDER_TOO_LARGE');
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toEqual([]);
  });

  it('exactly MAIL_MAX_ORDER_ITEMS items: sent', async () => {
    const orderId = await createOrder(database.db);
    // The sample order has two items of its own.
    await addItems(orderId, SMALL_LIMITS.maxOrderItems - 2);
    const result = await client.workflow.execute(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: httpWorker.taskQueue,
      args: [orderId],
    });
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a rendered mail over MAIL_MAX_RENDERED_BYTES (few items, long names): refused, nothing sent', async () => {
    const orderId = await createOrder(database.db);
    await addItems(orderId, 3, 20_000);
    await expectRefused(orderId, await failureOf(orderId, smtpWorker), 'ORDER_TOO_LARGE');
    expect(relay.transactionsFor(orderId)).toEqual([]);
  });

  it('200,000 items under the default limits: refused, nothing sent', async () => {
    const orderId = await createOrder(database.db);
    await addItems(orderId, 200_000);
    await expectRefused(orderId, await failureOf(orderId, defaultLimitsWorker), 'ORDER_TOO_LARGE');
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toEqual([]);
  });
});
