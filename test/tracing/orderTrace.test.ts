// One order's trace, end to end, as an OTLP collector receives it. A worker process exports every span over
// OTLP/HTTP to a receiver in this process (test/support/otlpReceiver.ts, which decodes the exporter's own
// protobuf); this test plays the order service, with its own span around the client's start and its own
// exporter to the same receiver. The trace must hold, in one trace, the start, the workflow, claim, send and
// record, and the provider request as the send's child, from both services; no span may carry the customer's
// address, name, the mail's text or the API key. The same trace in a real viewer (Jaeger's query API) is
// test/stack/traceViewer.test.ts, in `npm run test:stack`.
import { context, propagation, trace } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { startTracing, type Tracing } from '../../src/tracing/tracing';
import { startOtlpReceiver, onlySpan, waitForSpans, type OtlpReceiver } from '../support/otlpReceiver';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

// The sandbox's key; a span must not carry it.
const API_KEY = 'sandbox-key';
const CUSTOMER = {
  customerName: '高橋 美咲',
  customerEmail: 'misaki.trace@example.com',
  items: [{ productName: '玄米茶 200g', quantity: 3, unitPriceYen: 900 }],
};
const WORKER_SERVICE = 'order-confirmation-mail-worker';

let receiver: OtlpReceiver;
let database: TestDatabase;
let sandbox: MailSandbox;
let worker: WorkerProcess;
let orderService: Tracing;
let client: Client;
const taskQueue = `trace-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  database = await openTestDatabase('order_trace');
  sandbox = await startMailSandbox();
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: API_KEY,
    MAIL_VERIFY: 'off',
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_SERVICE_NAME: WORKER_SERVICE,
  });
  await worker.started;
  // This process plays the order service, with an OpenTelemetry SDK of its own; its exporter reads the
  // endpoint from the environment, as the worker's does.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
  orderService = await startTracing({ serviceName: 'order-service' });
  client = await connectOrderMailClient({
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
    tracing: true,
  });
}, 180_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await client?.connection.close();
  await orderService?.shutdown();
  // The next file in this process starts with tracing off, as the product does.
  context.disable();
  propagation.disable();
  trace.disable();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  await sandbox?.close();
  await database?.close();
  await receiver?.close();
});

it("one order's trace runs from the order service's start through the workflow to the provider request, and no span holds the mail", async () => {
  const orderId = await createOrder(database.db, CUSTOMER);
  let traceId = '';
  await trace.getTracer('order-service').startActiveSpan('place order', async (span) => {
    traceId = span.spanContext().traceId;
    try {
      expect((await startOrderConfirmationMail(client, orderId, { taskQueue })).status).toBe('started');
    } finally {
      span.end();
    }
  });
  await client.workflow.getHandle(orderId).result();
  expect((await readMailLog(database.db, orderId))?.state).toBe('sent');
  // The mail really held what no span may: the address and the text.
  const [received] = sandbox.messagesFor(orderId);
  expect(JSON.stringify(received)).toContain(CUSTOMER.customerEmail);
  expect(JSON.stringify(received)).toContain(CUSTOMER.items[0]!.productName);

  // The order service's spans now; the worker's are flushed by its orderly stop (and its batches).
  await orderService.shutdown();
  worker.kill('SIGTERM');
  expect(await worker.exited).toBe(0);

  const wanted = [
    'place order',
    'StartWorkflow:orderConfirmationMail',
    'RunWorkflow:orderConfirmationMail',
    'StartActivity:claimOrderMail',
    'RunActivity:claimOrderMail',
    'StartActivity:sendOrderMail',
    'RunActivity:sendOrderMail',
    'mail.http.request',
    'StartActivity:recordOrderMailOutcome',
    'RunActivity:recordOrderMailOutcome',
  ];
  const found = await waitForSpans(
    receiver,
    'the receiver to hold the whole trace',
    () => receiver.trace(traceId),
    wanted,
  );
  expect(receiver.failures).toEqual([]);

  // Both services, one trace.
  const services = new Set(found.map((span) => span.resource['service.name']));
  expect(services).toEqual(new Set(['order-service', WORKER_SERVICE]));
  const request = onlySpan(found, 'mail.http.request');
  expect(request.resource['service.name']).toBe(WORKER_SERVICE);
  expect(request.attributes['mail.provider']).toBe('generic');
  expect(request.attributes['order.id']).toBe(orderId);
  expect(request.attributes['mail.outcome']).toBe('accepted');
  expect(request.attributes['http.response.status_code']).toBe(202);
  // The provider request is the send activity's child.
  const send = onlySpan(found, 'RunActivity:sendOrderMail');
  expect(request.parentSpanId).toBe(send.spanId);
  // The start is the order service's span's child, and the workflow's runs hang below the start.
  const placed = onlySpan(found, 'place order');
  expect(placed.resource['service.name']).toBe('order-service');
  expect(onlySpan(found, 'StartWorkflow:orderConfirmationMail').parentSpanId).toBe(placed.spanId);

  const everything = JSON.stringify(found);
  for (const secret of [
    CUSTOMER.customerEmail,
    CUSTOMER.customerName,
    CUSTOMER.items[0]!.productName,
    API_KEY,
    'shop@example.com',
  ]) {
    expect(everything, `a span holds ${secret}`).not.toContain(secret);
  }
}, 240_000);
