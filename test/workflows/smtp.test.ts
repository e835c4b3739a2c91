// The workflow end to end over SMTP: the SMTP transport against the SMTP fault sandbox (a real smtp-server on
// loopback), real Temporal dev server, real Postgres, the worker code in-process. One test per outcome of
// docs/smtp-and-inbox.md; assertions are on the messages the sandbox kept, the log rows and the workflow.

import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { getFreePort } from '../../src/shared/freePort';
import { orderConfirmationMessageId } from '../../src/mail/smtp/smtpMessage';
import type { MailTransport } from '../../src/mail/types';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { FailureType } from '../../src/shared/failures';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testSettings,
  testSmtpTransport,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: SmtpSandbox;
let client: Client;
const transports: MailTransport[] = [];
const workers: RunningTestWorker[] = [];
let worker: RunningTestWorker;

function smtpTransport(port: number): MailTransport {
  const transport = testSmtpTransport(port);
  transports.push(transport);
  return transport;
}

async function startSmtpWorker(port: number): Promise<RunningTestWorker> {
  const started = await startTestWorker({
    db: database.db,
    mail: smtpTransport(port),
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent' }),
  });
  workers.push(started);
  return started;
}

beforeAll(async () => {
  database = await openTestDatabase('smtp');
  sandbox = await startSmtpSandbox();
  client = await connectTestClient();
  worker = await startSmtpWorker(sandbox.port);
}, 120_000);

afterAll(async () => {
  for (const running of workers) await running.stop();
  await client.connection.close();
  for (const transport of transports) await transport.close();
  await sandbox.close();
  await database.close();
});

function runMail(orderId: string, taskQueue = worker.taskQueue) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

describe('orderConfirmationMail over SMTP', () => {
  it('accepted: one message, sent/accepted, the queue id from the 250 as the provider id', async () => {
    const orderId = await createOrder(database.db);
    const result = await runMail(orderId);
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.messageId).toBe(orderConfirmationMessageId({ orderId, from: 'shop@example.com' }));
    expect(messages[0]!.envelopeId).toBe(`order-${orderId}`);
    expect(result).toMatchObject({
      result: 'sent',
      outcome: 'accepted',
      providerMessageId: messages[0]!.queueId,
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 1,
      providerMessageId: messages[0]!.queueId,
      httpStatus: 250,
    });
  });

  it("drop after the final '.' under assume-sent: one message kept, sent/unknown, not sent again", async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'drop-after-data' });
    const result = await runMail(orderId);
    expect(result).toMatchObject({ result: 'sent', outcome: 'unknown', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(sandbox.transactionsFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
    });
  });

  it('450 at RCPT, then success: one message, the attempts counted, the first not_sent', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'reply', at: 'rcpt', code: 450 });
    const result = await runMail(orderId);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(sandbox.transactionsFor(orderId).map((record) => record.result)).toEqual([450, 250]);
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', httpStatus: 450 },
      { attempt: 2, state: 'sent', outcome: 'accepted' },
    ]);
  });

  it('550 at RCPT: no message, failed/rejected, a Failed workflow', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'reply', at: 'rcpt', code: 550 });
    const error = await runMail(orderId).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(((error as WorkflowFailedError).cause as ApplicationFailure).type).toBe(FailureType.MailRejected);
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'rejected',
      httpStatus: 550,
      attempts: 1,
    });
  });

  it('connection refused: not_sent, retried until the relay is up, one message', async () => {
    const port = await getFreePort();
    const lateWorker = await startSmtpWorker(port);
    const orderId = await createOrder(database.db);
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: lateWorker.taskQueue,
      args: [orderId],
    });
    await waitFor('a refused first attempt', async () => {
      const [first] = await listAttempts(database.db, orderId);
      return first?.state === 'failed' ? first : undefined;
    });
    const lateRelay = await startSmtpSandbox({ port });
    try {
      const result = await handle.result();
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
      expect(result.attempts).toBeGreaterThanOrEqual(2);
      expect(lateRelay.messagesFor(orderId)).toHaveLength(1);
      const attempts = await listAttempts(database.db, orderId);
      expect(attempts[0]).toMatchObject({ state: 'failed', outcome: 'not_sent' });
      expect(attempts.at(-1)).toMatchObject({ state: 'sent', outcome: 'accepted' });
    } finally {
      await lateRelay.close();
    }
  });
});
