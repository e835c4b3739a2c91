// Many orders at once over SMTP, with the SMTP sandbox drawing faults by rate: at least 10% drop after the
// final '.', plus transient refusals at greeting and RCPT and drops before DATA. Under assume-sent the
// invariants must hold for every order: at most one message kept (0 duplicates), nothing left in 'sending',
// and the row agrees with what the relay kept.

import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { readMailLog } from '../../src/db/orderMailLog';
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

const ORDERS = 40;

let database: TestDatabase;
let sandbox: SmtpSandbox;
let mail: MailTransport;
let worker: RunningTestWorker;
let client: Client;

beforeAll(async () => {
  database = await openTestDatabase('smtp-chaos');
  sandbox = await startSmtpSandbox({
    seed: 7,
    rates: [
      { fault: { kind: 'drop-after-data' }, probability: 0.15 },
      { fault: { kind: 'reply', at: 'rcpt', code: 451 }, probability: 0.1 },
      { fault: { kind: 'drop-before-data' }, probability: 0.05 },
      { fault: { kind: 'reply', at: 'greeting', code: 421 }, probability: 0.05 },
    ],
  });
  mail = testSmtpTransport(sandbox.port, { poolSize: 4 });
  worker = await startTestWorker({
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent', maxSendAttempts: 10 }),
  });
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

it(`${ORDERS} orders under SMTP faults: 0 duplicates, nothing left sending, rows agree with the relay`, async () => {
  const orderIds: string[] = [];
  for (let i = 0; i < ORDERS; i += 1) orderIds.push(await createOrder(database.db));
  await Promise.all(
    orderIds.map((orderId) =>
      client.workflow.execute(orderConfirmationMail, {
        workflowId: orderId,
        taskQueue: worker.taskQueue,
        args: [orderId],
      }),
    ),
  );

  const dropsAfterData = sandbox.transactions().filter((record) => record.fault === 'drop-after-data');
  expect(dropsAfterData.length).toBeGreaterThanOrEqual(ORDERS * 0.1);
  for (const orderId of orderIds) {
    const kept = sandbox.messagesFor(orderId);
    const row = await readMailLog(database.db, orderId);
    expect(kept.length, `order ${orderId}`).toBeLessThanOrEqual(1);
    expect(row?.state, `order ${orderId}`).toBe('sent');
    if (row?.outcome === 'accepted') expect(row.providerMessageId).toBe(kept[0]?.queueId);
    else expect(row?.outcome).toBe('unknown');
    expect(kept, `order ${orderId}`).toHaveLength(1);
  }
});
