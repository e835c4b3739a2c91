// `ops status` shows what the provider reported by webhook: a mail sent through SendGrid to an address that
// bounces is 'sent' in the log (the provider took it), and status says the customer has no mail and why,
// from the bounce event the sandbox posted to the real receiver.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { main } from '../../src/cli/ops';
import type { MailTransport } from '../../src/mail/types';
import type { OrderMailStatus } from '../../src/ops/orderMailStatus';
import { listProviderEvents } from '../../src/webhooks/providerEvents';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;

beforeAll(async () => {
  database = await openTestDatabase('ops_provider_events');
  sandbox = await startMailSandbox({ webhooks: { delayMs: 50 } });
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
    mailgunSigningKey: null,
    maxAgeMs: 300_000,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url });
  mail = testProviderMailClient('sendgrid', sandbox.url);
  client = await connectTestClient();
  worker = await startTestWorker({ db: database.db, mail, settings: testSettings() });
});

afterAll(async () => {
  await worker?.stop();
  await client?.connection.close();
  await mail?.close();
  await receiver?.close();
  await sandbox?.close();
  await database?.close();
});

it('a bounced mail: status lists the provider events and says why the customer has no mail', async () => {
  const orderId = await createOrder(database.db, { customerEmail: 'bounce-taro@example.com' });
  await client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: worker.taskQueue,
    args: [orderId],
  });
  await waitFor('the bounce event', async () =>
    (await listProviderEvents(database.db, orderId)).some((event) => event.eventType === 'bounced')
      ? true
      : undefined,
  );
  const out: string[] = [];
  const env = {
    OPS_DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: worker.taskQueue,
  };
  const io = { out: (text: string) => out.push(text), err: (text: string) => out.push(text) };
  expect(await main(['status', orderId, '--json'], env, io)).toBe(0);
  const status = JSON.parse(out.join('\n')) as OrderMailStatus;
  expect(status.row).toMatchObject({ state: 'sent', outcome: 'accepted' });
  expect(status.providerEvents.map((event) => [event.provider, event.eventType])).toEqual([
    ['sendgrid', 'accepted'],
    ['sendgrid', 'bounced'],
  ]);
  expect(status.nextStep).toMatch(/bounced it \(bounce .*mailbox does not exist\): the customer has no mail/);
  expect(status.nextStep).not.toContain('bounce-taro@example.com');

  out.length = 0;
  expect(await main(['status', orderId], env, io)).toBe(0);
  const text = out.join('\n');
  expect(text).toMatch(
    /provider events:\n.* sendgrid accepted .*\n.* sendgrid bounced .*mailbox does not exist/,
  );
});
