// The worker's OTLP export configured only by the OpenTelemetry specification's variables, against a loopback
// HTTP receiver in this process (no Jaeger): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is taken as the full URL (a path
// no default would make), the body is OTLP protobuf, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are on the
// resource, and a log line the worker made within an activity names a trace that was exported.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const TRACES_PATH = '/collector/otlp-traces';
const SERVICE_NAME = `mail-otlp-env-${process.pid}`;
const ENVIRONMENT = `otlp-env-test-${process.pid}`;

interface Received {
  method: string;
  path: string;
  contentType: string;
  body: Buffer;
}

let receiver: Server;
const received: Received[] = [];
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let worker: WorkerProcess;
const taskQueue = `otlp-env-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        path: request.url ?? '',
        contentType: request.headers['content-type'] ?? '',
        body: Buffer.concat(chunks),
      });
      // An empty ExportTraceServiceResponse: full success.
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { port } = receiver.address() as AddressInfo;
  database = await openTestDatabase('otlp_environment');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
  worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    MAIL_DEPLOYMENT_ID: 'test-otlp-environment',
    MAIL_VERIFY: 'off',
    // Only the signal's own endpoint: the general one, empty, is no fallback.
    OTEL_EXPORTER_OTLP_ENDPOINT: '',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}${TRACES_PATH}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_SERVICE_NAME: SERVICE_NAME,
    OTEL_RESOURCE_ATTRIBUTES: `deployment.environment=${ENVIRONMENT},team=mail%20ops`,
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  await worker.started;
}, 120_000);

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
});

it("spans go to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as OTLP protobuf, with the environment's resource, and the activity's log line names their trace", async () => {
  const orderId = await createOrder(database.db);
  await client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
  expect((await readMailLog(database.db, orderId))?.state).toBe('sent');

  // The record activity's line, made within the activity's span.
  const recorded = await waitFor('the worker to log the recorded outcome', () =>
    Promise.resolve(
      worker
        .stdout()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((line) => line.message === 'Order mail outcome recorded' && line.orderId === orderId),
    ),
  );
  expect(recorded.trace_id).toMatch(/^[0-9a-f]{32}$/);
  expect(recorded.span_id).toMatch(/^[0-9a-f]{16}$/);
  const traceIdBytes = Buffer.from(String(recorded.trace_id), 'hex');

  // Spans are ids as raw bytes in the protobuf body: the trace the log line names was exported.
  await waitFor('the receiver to hold the log line’s trace', () =>
    Promise.resolve(received.some((request) => request.body.includes(traceIdBytes)) || undefined),
  );
  expect(received.length).toBeGreaterThan(0);
  for (const request of received) {
    expect(request).toMatchObject({
      method: 'POST',
      path: TRACES_PATH,
      contentType: 'application/x-protobuf',
    });
    // Every export carries the resource: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES (percent-decoded).
    expect(request.body.includes(Buffer.from(SERVICE_NAME))).toBe(true);
    expect(request.body.includes(Buffer.from('deployment.environment'))).toBe(true);
    expect(request.body.includes(Buffer.from(ENVIRONMENT))).toBe(true);
    expect(request.body.includes(Buffer.from('mail ops'))).toBe(true);
  }
}, 120_000);
