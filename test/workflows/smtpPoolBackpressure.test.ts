// 100 sends at once through an SMTP pool of 5 (the case), against the real SMTP sandbox with a slow
// relay: most sends wait for a pooled connection. A send that only waited in the worker's queue never reached
// the relay, so it must never be recorded as an unknown outcome (under assume-sent that is "sent" for a mail
// nobody sent), and no execution Temporal gave up on may send afterwards. Every order: one message, recorded
// sent/accepted with that message's queue id.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testSettings,
  testSmtpTransport,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const ORDERS = 100;
const POOL_SIZE = 5;
// Each message's final reply comes this late: 5 connections move about 6 messages a second, so the last
// of 100 waits far longer than the send timeout for a connection.
const RELAY_DELAY_MS = 800;
// The reply deadline leaves the relay's delay room on a starved CPU: a reply that came is never an unknown.
const REPLY_TIMEOUT_MS = 2_000;
const SEND_TIMEOUT_MS = 10_000;

let database: TestDatabase;
let relay: SmtpSandbox;
let client: Client;
let transport: MailTransport;
let worker: RunningTestWorker | null = null;

beforeAll(async () => {
  database = await openTestDatabase('smtp_pool');
  relay = await startSmtpSandbox();
  relay.setRates([{ fault: { kind: 'hang-after-data', ms: RELAY_DELAY_MS }, probability: 1 }]);
  client = await connectTestClient();
  // The transport's other deadlines are the test kit's (3 s overall after the fence).
  transport = testSmtpTransport(relay.port, { poolSize: POOL_SIZE, replyTimeoutMs: REPLY_TIMEOUT_MS });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await client.connection.close();
  await transport.close();
  await relay.close();
  await database.close();
});

it('100 concurrent sends through a pool of 5: no unknown for a send that only queued, one message each', async () => {
  worker = await startTestWorker(
    {
      db: database.db,
      mail: transport,
      settings: testSettings({
        sendTimeoutMs: SEND_TIMEOUT_MS,
        unknownOutcomePolicy: 'assume-sent',
        // Sends that found no connection in time are retried; give them room to get through.
        maxSendAttempts: 30,
      }),
    },
    // Its deadlines run on this event loop, beside the relay: 100 workflows' activations there would delay replies.
    { maxConcurrentActivities: ORDERS, workflowsOnMainThread: false },
  );
  const orderIds: string[] = [];
  for (let i = 0; i < ORDERS; i++) orderIds.push(await createOrder(database.db));
  const taskQueue = worker.taskQueue;
  const results = await Promise.all(
    orderIds.map((orderId) =>
      client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
    ),
  );
  // Whatever Temporal gave up on is still running in the worker; stopping it waits for all of it, so any
  // late send would be in the relay's count below.
  await worker.stop();
  worker = null;

  let ordersThatWaitedOut = 0;
  for (const [index, orderId] of orderIds.entries()) {
    const attempts = await listAttempts(database.db, orderId);
    if (attempts.length > 1) ordersThatWaitedOut++;
    const messages = relay.messagesFor(orderId);
    const row = await readMailLog(database.db, orderId);
    const seen = {
      orderId,
      result: results[index]!.result,
      outcomes: attempts.map((attempt) => attempt.outcome),
      messages: messages.length,
      row: { state: row?.state, outcome: row?.outcome, providerMessageId: row?.providerMessageId },
    };
    expect(seen).toEqual({
      orderId,
      result: 'sent',
      // Any attempts before the last found no connection in time: not sent, and known to be.
      outcomes: [...attempts.slice(0, -1).map(() => 'not_sent'), 'accepted'],
      messages: 1,
      row: { state: 'sent', outcome: 'accepted', providerMessageId: messages[0]?.queueId },
    });
    // A send that waited for a connection and gave up never reached the relay: one transaction per order.
    expect({ orderId, transactions: relay.transactionsFor(orderId).length }).toEqual({
      orderId,
      transactions: 1,
    });
  }
  expect(relay.messages()).toHaveLength(ORDERS);
  // The case under test happened: some sends gave up waiting for a connection and were sent on a retry.
  expect(ordersThatWaitedOut).toBeGreaterThan(0);
}, 180_000);
