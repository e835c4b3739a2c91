// One order's trace over SMTP: a worker process with MAIL_PROVIDER=smtp sends through the SMTP fault sandbox
// (a real smtp-server on loopback) and exports over OTLP to a receiver in this process
// (test/support/otlpReceiver.ts, which decodes the exporter's own protobuf). The trace must hold the
// workflow, claim, send and record, and inside the send one `mail.smtp.send` span: the provider, the order,
// the outcome and the relay's reply code, and nothing of the message (recipient, sender, subject, text).
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { CONFIG_DEFAULTS } from '../../src/config/loadConfig';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { onlySpan, startOtlpReceiver, waitForSpans, type OtlpReceiver } from '../support/otlpReceiver';
import { connectTestClient, createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const WORKER_SERVICE = 'order-confirmation-mail-worker-smtp';
const CUSTOMER = {
  customerName: '佐藤 健太',
  customerEmail: 'kenta.smtp-trace@example.com',
  items: [{ productName: '抹茶羊羹 3本入', quantity: 2, unitPriceYen: 1_200 }],
};

let receiver: OtlpReceiver;
let database: TestDatabase;
let sandbox: SmtpSandbox;
let worker: WorkerProcess;
let client: Client;
const taskQueue = `smtp-trace-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  database = await openTestDatabase('smtp_trace');
  sandbox = await startSmtpSandbox();
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_PROVIDER: 'smtp',
    SMTP_HOST: sandbox.host,
    SMTP_PORT: String(sandbox.port),
    // Plain SMTP on loopback, no AUTH: the sandbox offers neither TLS nor credentials.
    SMTP_SECURE: 'false',
    SMTP_STARTTLS: 'off',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_SERVICE_NAME: WORKER_SERVICE,
  });
  await worker.started;
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
  await receiver?.close();
});

it("an order's SMTP send is one mail.smtp.send span inside the send activity, with the reply code and no part of the message", async () => {
  const orderId = await createOrder(database.db, CUSTOMER);
  await client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  // The message really held what no span may.
  const [message] = sandbox.messagesFor(orderId);
  const received = JSON.stringify(message);
  expect(received).toContain(CUSTOMER.customerEmail);
  expect(received).toContain(CONFIG_DEFAULTS.MAIL_FROM);

  const found = await waitForSpans(
    receiver,
    'the receiver to hold the SMTP trace',
    () => receiver.traceWith(WORKER_SERVICE, { 'order.id': orderId }),
    [
      'RunWorkflow:orderConfirmationMail',
      'RunActivity:claimOrderMail',
      'RunActivity:sendOrderMail',
      'mail.smtp.send',
      'RunActivity:recordOrderMailOutcome',
    ],
  );
  const transaction = onlySpan(found, 'mail.smtp.send');
  expect(receiver.failures).toEqual([]);
  expect(transaction.parentSpanId).toBe(onlySpan(found, 'RunActivity:sendOrderMail').spanId);
  expect(transaction.resource['service.name']).toBe(WORKER_SERVICE);
  expect(transaction.kind).toBe('client');
  expect(transaction.attributes['mail.provider']).toBe('smtp');
  expect(transaction.attributes['order.id']).toBe(orderId);
  expect(transaction.attributes['mail.outcome']).toBe('accepted');
  expect(transaction.attributes['mail.smtp.reply_code']).toBe(250);
  // SMTP's status is the reply code; there is no HTTP status and no error on an accepted message.
  expect(transaction.attributes['http.response.status_code']).toBeUndefined();
  expect(transaction.attributes['mail.error_code']).toBeUndefined();
  expect(found.filter((span) => span.name === 'mail.http.request')).toEqual([]);

  const everything = JSON.stringify(found);
  for (const secret of [
    CUSTOMER.customerEmail,
    CUSTOMER.customerName,
    CUSTOMER.items[0]!.productName,
    CONFIG_DEFAULTS.MAIL_FROM,
    CONFIG_DEFAULTS.MAIL_SUBJECT,
  ]) {
    expect(everything, `a span holds ${secret}`).not.toContain(secret);
  }
});
