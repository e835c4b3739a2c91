// The worker's OTLP export configured only by the OpenTelemetry specification's variables, against a loopback
// HTTP receiver in this process (test/support/otlpReceiver.ts, decoding the exporter's own protobuf):
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is taken as the full URL (a path no default would make), the body is OTLP
// protobuf, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are on the resource, and a log line the worker made
// within an activity names a span that was exported.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlpReceiver';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const TRACES_PATH = '/collector/otlp-traces';
const SERVICE_NAME = `mail-otlp-env-${process.pid}`;
const ENVIRONMENT = `otlp-env-test-${process.pid}`;

let receiver: OtlpReceiver;
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let worker: WorkerProcess;
const taskQueue = `otlp-env-${process.pid}-${Date.now()}`;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
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
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.endpoint}${TRACES_PATH}`,
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
  await receiver?.close();
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

  // The span the log line names was exported, in the trace it names.
  await waitFor('the receiver to hold the log line’s span', () =>
    Promise.resolve(receiver.spans().find((span) => span.spanId === recorded.span_id)),
  );
  expect(receiver.spans().find((span) => span.spanId === recorded.span_id)).toMatchObject({
    traceId: recorded.trace_id,
    name: 'RunActivity:recordOrderMailOutcome',
  });
  expect(receiver.failures).toEqual([]);
  expect(receiver.exports.length).toBeGreaterThan(0);
  for (const request of receiver.exports) {
    expect(request).toMatchObject({
      method: 'POST',
      path: TRACES_PATH,
      contentType: 'application/x-protobuf',
    });
    // Every span carries the resource: OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES (percent-decoded).
    expect(request.spans.length).toBeGreaterThan(0);
    for (const span of request.spans) {
      expect(span.resource).toMatchObject({
        'service.name': SERVICE_NAME,
        'deployment.environment': ENVIRONMENT,
        team: 'mail ops',
      });
    }
  }
}, 120_000);
