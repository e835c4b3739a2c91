// One order's trace, end to end, in real trace viewers. A worker process exports every span over OTLP to a
// Jaeger v2 (`bash scripts/setup.sh --tracing`) and, through OTEL_EXPORTER_ZIPKIN_ENDPOINT, to a Zipkin, both on
// loopback ports; this test plays the order service, with its own span around the client's start. The trace is
// read back from Jaeger's query API and must hold, in one trace, the start, the workflow, claim, send and
// record, and the provider request; no span may carry the customer's address, name, the mail's text or the API
// key. Then Chromium opens the same trace in Zipkin's own web UI (Jaeger's Go-module build has none), the test
// checks what the page shows, and the screenshot is kept for docs/operating.md (UPDATE_SCREENSHOTS=1).
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { trace } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startJaeger, type RunningJaeger } from '../../dev/devtools/jaeger';
import { startZipkin, type RunningZipkin } from '../../dev/devtools/zipkin';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import { connectOrderMailClient, startOrderConfirmationMail } from '../../src/client';
import { readMailLog } from '../../src/db/orderMailLog';
import { startTracing, type Tracing } from '../../src/tracing/tracing';
import { createOrder, openTestDatabase, waitFor, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';
import { onlySpan, readTrace, spanTag, waitForSpans } from './jaegerApi';

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
let zipkin: RunningZipkin;
let zipkinStarting: Promise<RunningZipkin> | undefined;
let database: TestDatabase;
let sandbox: MailSandbox;
let worker: WorkerProcess;
let orderService: Tracing;
let client: Client;
const taskQueue = `trace-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  // Zipkin's JVM takes the longest to start; the rest starts meanwhile.
  zipkinStarting = startZipkin();
  zipkinStarting.catch(() => undefined);
  jaeger = await startJaeger();
  database = await openTestDatabase('order_trace');
  sandbox = await startMailSandbox();
  zipkin = await zipkinStarting;
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
    OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
    OTEL_EXPORTER_ZIPKIN_ENDPOINT: zipkin.spansEndpoint,
    OTEL_SERVICE_NAME: WORKER_SERVICE,
  });
  await worker.started;
  // This process plays the order service, with an OpenTelemetry SDK of its own; its exporter reads the
  // endpoint from the environment, as the worker's does.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = jaeger.otlpEndpoint;
  orderService = await startTracing({
    serviceName: 'order-service',
    zipkinEndpoint: zipkin.spansEndpoint,
  });
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
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  await sandbox?.close();
  await database?.close();
  await jaeger?.stop();
  await (await zipkinStarting?.catch(() => undefined))?.stop();
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
    'Jaeger to hold the whole trace',
    () => readTrace(jaeger.queryUrl, traceId),
    wanted,
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

  // Zipkin got the same spans from the same processes (it keeps span names in lower case).
  const zipkinSpans = await waitFor(
    'Zipkin to hold the whole trace',
    async () => {
      const response = await fetch(`${zipkin.url}/api/v2/trace/${traceId}`);
      if (!response.ok) return undefined;
      const spans = (await response.json()) as { name: string; localEndpoint?: { serviceName?: string } }[];
      const names = new Set(spans.map((span) => span.name));
      return wanted.every((name) => names.has(name.toLowerCase())) ? spans : undefined;
    },
    30_000,
  );
  expect(zipkinSpans).toHaveLength(found.spans.length);

  for (const [viewer, everything] of [
    ['Jaeger', JSON.stringify(found)],
    ['Zipkin', JSON.stringify(zipkinSpans)],
  ] as const) {
    for (const secret of [
      CUSTOMER.customerEmail,
      CUSTOMER.customerName,
      CUSTOMER.items[0]!.productName,
      API_KEY,
      'shop@example.com',
    ]) {
      expect(everything, `${viewer} holds ${secret}`).not.toContain(secret);
    }
  }

  // The trace in Zipkin's own web UI, in a real browser.
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash scripts/setup.sh --browser`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    await page.goto(`${zipkin.url}/zipkin/traces/${traceId}`);
    // Each span is a row "service: span name" (a div; the heading names the root span too), and the header
    // counts the services and spans.
    const row = (service: string, name: string) =>
      page.getByText(`${service}: ${name.toLowerCase()}`, { exact: true }).and(page.locator('div'));
    await page.getByRole('heading', { name: 'order-service: place order' }).waitFor({ timeout: 30_000 });
    expect(await row('order-service', 'place order').count()).toBe(1);
    expect(await row('order-service', 'StartWorkflow:orderConfirmationMail').count()).toBe(1);
    for (const name of wanted.slice(2)) expect(await row(WORKER_SERVICE, name).count(), name).toBe(1);
    expect(await page.getByText('Total Spans', { exact: true }).locator('..').innerText()).toContain(
      String(found.spans.length),
    );
    expect(await page.getByText('Services', { exact: true }).locator('..').innerText()).toContain('2');
    // The provider request picked: its tags in the side panel say what the span says, and nothing more.
    await row(WORKER_SERVICE, 'mail.http.request').click();
    await page.getByText('mail.outcome', { exact: true }).waitFor();
    const shown = await page.locator('body').innerText();
    for (const [key, value] of [
      ['mail.provider', 'generic'],
      ['order.id', orderId],
      ['mail.outcome', 'accepted'],
      ['http.response.status_code', '202'],
    ] as const) {
      expect(shown).toMatch(new RegExp(`${key.replace(/\./g, '\\.')}\\s+${value}`));
    }
    expect(shown).not.toContain(CUSTOMER.customerEmail);
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  } finally {
    await browser.close();
  }
}, 240_000);
