// One order's trace in a real trace viewer, on the production topology: the stack's worker process (the
// Temporal server on Postgres) exports over OTLP to a Jaeger v2 (`bash scripts/setup.sh --tracing` builds it,
// which `npm run test:stack` asks for), and this test plays the order service with its own span around the
// client's start. The trace is read back from Jaeger's query API and must hold, in one trace, the start, the
// workflow, claim, send and record, and the provider request as the send's child, from both services; no
// span Jaeger holds may carry the customer's address, name, the mail's text or the API key. What the exporter
// sends is checked span by span in `npm test` (test/tracing/orderTrace.test.ts, an in-process receiver); this
// is the same trace as a viewer stores and serves it.
import { trace } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startJaeger, type RunningJaeger } from '../../dev/devtools/jaeger';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { startTracing, type Tracing } from '../../src/tracing/tracing';
import { createOrder } from '../support/testKit';
import { onlySpan, readTrace, spanTag, waitForSpans } from './jaegerApi';
import { clientEnvironment, startTestStack, type TestStack } from './stackKit';

// The stack's sandbox key; a span must not carry it.
const API_KEY = 'sandbox-key';
const CUSTOMER = {
  customerName: '高橋 美咲',
  customerEmail: 'misaki.trace@example.com',
  items: [{ productName: '玄米茶 200g', quantity: 3, unitPriceYen: 900 }],
};
const WORKER_SERVICE = 'order-confirmation-mail-worker';

let jaeger: RunningJaeger;
let testStack: TestStack;
let sandbox: MailSandbox;
let orderService: Tracing;
let client: Client;

beforeAll(async () => {
  jaeger = await startJaeger();
  testStack = await startTestStack({
    workers: 1,
    uiPort: null,
    workerEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_SERVICE_NAME: WORKER_SERVICE },
  });
  sandbox = testStack.stack.sandbox;
  // This process plays the order service, with an OpenTelemetry SDK of its own; its exporter reads the
  // endpoint from the environment, as the worker's does.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = jaeger.otlpEndpoint;
  orderService = await startTracing({ serviceName: 'order-service' });
  client = await connectOrderMailClient({ env: clientEnvironment(testStack.stack), tracing: true });
});

afterAll(async () => {
  await client?.connection.close();
  await orderService?.shutdown();
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  await testStack?.close();
  await jaeger?.stop();
});

it("one order's trace, from the order service's start to the provider request, is one trace in Jaeger, and no span holds the mail", async () => {
  const orderId = await createOrder(testStack.db, CUSTOMER);
  let traceId = '';
  await trace.getTracer('order-service').startActiveSpan('place order', async (span) => {
    traceId = span.spanContext().traceId;
    try {
      expect((await startOrderConfirmationMail(client, orderId)).status).toBe('started');
    } finally {
      span.end();
    }
  });
  await client.workflow.getHandle(orderId).result();
  expect((await readMailLog(testStack.db, orderId))?.state).toBe('sent');
  // The mail really held what no span may: the address and the text.
  const [received] = sandbox.messagesFor(orderId);
  expect(JSON.stringify(received)).toContain(CUSTOMER.customerEmail);
  expect(JSON.stringify(received)).toContain(CUSTOMER.items[0]!.productName);
  // The order service's spans now; the worker's leave in its batches (every second by default).
  await orderService.shutdown();

  const found = await waitForSpans(
    'Jaeger to hold the whole trace',
    () => readTrace(jaeger.queryUrl, traceId),
    [
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
    ],
  );

  // Both services, one trace.
  const services = new Set(Object.values(found.processes).map((p) => p.serviceName));
  expect(services).toEqual(new Set(['order-service', WORKER_SERVICE]));
  const request = onlySpan(found, 'mail.http.request');
  expect(found.processes[request.processID]?.serviceName).toBe(WORKER_SERVICE);
  expect(spanTag(request, 'mail.provider')).toBe('generic');
  expect(spanTag(request, 'order.id')).toBe(orderId);
  expect(spanTag(request, 'mail.outcome')).toBe('accepted');
  expect(spanTag(request, 'http.response.status_code')).toBe(202);
  // The provider request is the send activity's child.
  const send = onlySpan(found, 'RunActivity:sendOrderMail');
  expect(request.references.map((r) => r.spanID)).toContain(send.spanID);

  const everything = JSON.stringify(found);
  for (const secret of [
    CUSTOMER.customerEmail,
    CUSTOMER.customerName,
    CUSTOMER.items[0]!.productName,
    API_KEY,
    'shop@example.com',
  ]) {
    expect(everything, `Jaeger holds ${secret}`).not.toContain(secret);
  }
});
