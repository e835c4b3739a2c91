// One order's trace, end to end, in a real trace viewer: Jaeger v2 (`bash scripts/setup.sh --tracing`) on
// loopback ports, a worker process exporting to it over OTLP (OTEL_EXPORTER_OTLP_ENDPOINT), and this test as
// the order service: its own span around the client's start. The trace is read back from Jaeger's query API
// and must hold, in one trace, the start, the workflow, claim, send and record, and the provider request;
// no span may carry the customer's address, name, the mail's text or the API key. Then Chromium shows the
// trace as Jaeger returned it, and the screenshot is kept for docs/operating.md (UPDATE_SCREENSHOTS=1).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { trace } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startJaeger, type RunningJaeger } from '../../dev/devtools/jaeger';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { startTracing, type Tracing } from '../../src/tracing/tracing';
import { createOrder, openTestDatabase, waitFor, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { traceWaterfallHtml, type WaterfallTrace } from './traceWaterfall';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOT =
  process.env.UPDATE_SCREENSHOTS === '1'
    ? path.join(__dirname, '..', '..', 'docs', 'screenshots', 'order-trace.png')
    : path.join(__dirname, '..', '..', 'test-artifacts', 'order-trace.png');
// The sandbox's key; a span must not carry it.
const API_KEY = 'sandbox-key';
const CUSTOMER = {
  customerName: '高橋 美咲',
  customerEmail: 'misaki.trace@example.com',
  items: [{ productName: '玄米茶 200g', quantity: 3, unitPriceYen: 900 }],
};
const WORKER_SERVICE = 'order-confirmation-mail-worker';

let jaeger: RunningJaeger;
let database: TestDatabase;
let sandbox: MailSandbox;
let worker: WorkerProcess;
let orderService: Tracing;
let client: Client;
const taskQueue = `trace-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  jaeger = await startJaeger();
  database = await openTestDatabase('order_trace');
  sandbox = await startMailSandbox();
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: API_KEY,
    MAIL_VERIFY: 'off',
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    OTEL_SERVICE_NAME: WORKER_SERVICE,
  });
  await worker.started;
  // This process plays the order service, with an OpenTelemetry SDK of its own.
  orderService = await startTracing({ endpoint: jaeger.otlpEndpoint, serviceName: 'order-service' });
  client = await connectOrderMailClient({
    address: inject('temporalAddress'),
    namespace: inject('temporalNamespace'),
    tracing: true,
  });
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await client?.connection.close();
  await orderService?.shutdown();
  await sandbox?.close();
  await database?.close();
  await jaeger?.stop();
});

interface JaegerSpan {
  spanID: string;
  operationName: string;
  processID: string;
  tags: { key: string; value: unknown }[];
  logs: { fields: { key: string; value: unknown }[] }[];
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

async function readTrace(traceId: string): Promise<JaegerTrace | undefined> {
  const response = await fetch(`${jaeger.queryUrl}/api/traces/${traceId}`);
  if (!response.ok) return undefined;
  const body = (await response.json()) as { data?: JaegerTrace[] };
  return body.data?.[0];
}

function tag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

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
  const found = await waitFor(
    'Jaeger to hold the whole trace',
    async () => {
      const read = await readTrace(traceId);
      const names = new Set(read?.spans.map((s) => s.operationName));
      return wanted.every((name) => names.has(name)) ? read : undefined;
    },
    30_000,
  ).catch(async (error: unknown) => {
    const read = await readTrace(traceId);
    throw new Error(
      `${String(error)}; the trace holds: ${JSON.stringify(read?.spans.map((s) => s.operationName))}`,
    );
  });

  // Both services, one trace.
  const services = new Set(Object.values(found.processes).map((p) => p.serviceName));
  expect(services).toEqual(new Set(['order-service', WORKER_SERVICE]));
  const request = found.spans.find((s) => s.operationName === 'mail.http.request')!;
  expect(found.processes[request.processID]?.serviceName).toBe(WORKER_SERVICE);
  expect(tag(request, 'mail.provider')).toBe('generic');
  expect(tag(request, 'order.id')).toBe(orderId);
  expect(tag(request, 'mail.outcome')).toBe('accepted');
  expect(tag(request, 'http.response.status_code')).toBe(202);
  // The provider request is the send activity's child.
  const send = found.spans.find((s) => s.operationName === 'RunActivity:sendOrderMail')!;
  expect(
    (request as JaegerSpan & { references: { spanID: string }[] }).references.map((r) => r.spanID),
  ).toContain(send.spanID);

  const everything = JSON.stringify(found);
  for (const secret of [
    CUSTOMER.customerEmail,
    CUSTOMER.customerName,
    CUSTOMER.items[0]!.productName,
    API_KEY,
    'shop@example.com',
  ]) {
    expect(everything).not.toContain(secret);
  }

  // The same trace drawn in a real browser, from what Jaeger returned (traceWaterfall.ts says why not its UI).
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash scripts/setup.sh --browser`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.setContent(traceWaterfallHtml(found as unknown as WaterfallTrace));
    expect(await page.getByText('mail.http.request').count()).toBe(1);
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  } finally {
    await browser.close();
  }
}, 180_000);
