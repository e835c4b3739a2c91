// One order's trace over SMTP: a worker process with MAIL_PROVIDER=smtp sends through the SMTP fault sandbox
// (a real smtp-server on loopback) and exports over OTLP to a real Jaeger v2. The trace must hold the
// workflow, claim, send and record, and inside the send one `mail.smtp.send` span: the provider, the order,
// the outcome and the relay's reply code, and nothing of the message (recipient, sender, subject, text).
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startJaeger, type RunningJaeger } from '../../dev/devtools/jaeger';
import { startSmtpSandbox, type SmtpSandbox } from '../../dev/sandbox/smtp/smtpSandbox';
import { CONFIG_DEFAULTS } from '../../src/config/loadConfig';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { connectTestClient, createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { findTrace, onlySpan, spanTag, waitForSpans } from './jaegerApi';

const WORKER_SERVICE = 'order-confirmation-mail-worker-smtp';
const CUSTOMER = {
  customerName: '佐藤 健太',
  customerEmail: 'kenta.smtp-trace@example.com',
  items: [{ productName: '抹茶羊羹 3本入', quantity: 2, unitPriceYen: 1_200 }],
};

let jaeger: RunningJaeger;
let database: TestDatabase;
let sandbox: SmtpSandbox;
let worker: WorkerProcess;
let client: Client;
const taskQueue = `smtp-trace-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  jaeger = await startJaeger();
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
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
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
  await jaeger?.stop();
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
    'Jaeger to hold the SMTP trace',
    () => findTrace(jaeger.queryUrl, WORKER_SERVICE, { 'order.id': orderId }),
    [
      'RunWorkflow:orderConfirmationMail',
      'RunActivity:claimOrderMail',
      'RunActivity:sendOrderMail',
      'mail.smtp.send',
      'RunActivity:recordOrderMailOutcome',
    ],
  );
  const transaction = onlySpan(found, 'mail.smtp.send');
  expect(transaction.references.map((r) => r.spanID)).toContain(
    onlySpan(found, 'RunActivity:sendOrderMail').spanID,
  );
  expect(spanTag(transaction, 'span.kind')).toBe('client');
  expect(spanTag(transaction, 'mail.provider')).toBe('smtp');
  expect(spanTag(transaction, 'order.id')).toBe(orderId);
  expect(spanTag(transaction, 'mail.outcome')).toBe('accepted');
  expect(spanTag(transaction, 'mail.smtp.reply_code')).toBe(250);
  // SMTP's status is the reply code; there is no HTTP status and no error on an accepted message.
  expect(spanTag(transaction, 'http.response.status_code')).toBeUndefined();
  expect(spanTag(transaction, 'mail.error_code')).toBeUndefined();
  expect(found.spans.filter((s) => s.operationName === 'mail.http.request')).toEqual([]);

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
