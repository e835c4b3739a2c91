// Secrets and personal data stay where they belong. Real worker processes (src/worker.ts, as deployed) send
// through the sandbox with a canary API key, to a canary customer (name and address), along the paths where
// a leak would happen: accepted, accept-then-drop retried under the idempotency key, an address the provider
// refuses (its error text echoes the address), and a wrong key (its error text echoes the key). Then three
// places are searched: everything the workers printed, every workflow history as exported by
// `temporal workflow show --output json` (with each payload decoded), and the log tables. The canaries must
// be absent from all of them, and present where they must be (the orders table, the sandbox's inbox).

import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { findTemporalCli } from '../../dev/devtools/findTemporalCli';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { connectTestClient, createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const tag = randomUUID().replace(/-/g, '');
const CANARY_KEY = `re_canaryKEY${tag}`;
const CANARY_WRONG_KEY = `canaryWRONGKEY${tag}`;
const CANARY_NAME = `カナリア鳥子${tag.slice(0, 8)}`;
const CANARY_ADDRESS = `canary.${tag}@example.com`;
const CANARY_BAD_ADDRESS = `canary-refused-${tag}`;

/** Every form a key can travel in: as is, and base64 (Mailgun's Basic auth is base64 of `api:<key>`). */
const FORBIDDEN = [
  CANARY_KEY,
  CANARY_WRONG_KEY,
  Buffer.from(`api:${CANARY_KEY}`).toString('base64'),
  Buffer.from(`api:${CANARY_WRONG_KEY}`).toString('base64'),
  Buffer.from(CANARY_KEY).toString('base64'),
  CANARY_NAME,
  CANARY_ADDRESS,
  CANARY_BAD_ADDRESS,
  // The tag alone catches a canary that was cut, re-encoded or URL-escaped around it.
  tag,
];

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openTestDatabase('canary');
  sandbox = await startMailSandbox({ apiKey: CANARY_KEY });
  client = await connectTestClient();
});

afterAll(async () => {
  for (const worker of workers) worker.child.kill('SIGKILL');
  await client.connection.close();
  await sandbox.close();
  await database.close();
});

function workerEnv(taskQueue: string, overrides: Record<string, string>): Record<string, string> {
  return {
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_CONNECT_TIMEOUT_MS: '1000',
    MAIL_HEADERS_TIMEOUT_MS: '2000',
    MAIL_OVERALL_TIMEOUT_MS: '3000',
    SEND_ACTIVITY_TIMEOUT_MS: '8000',
    SEND_RETRY_INITIAL_MS: '200',
    SEND_RETRY_MAX_MS: '1000',
    SEND_MAX_ATTEMPTS: '3',
    MAIL_FROM: 'Shop <shop@example.com>',
    // The run's bundle, as the image's WORKFLOW_BUNDLE_PATH: webpack at each start would cost seconds of CPU.
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    ...overrides,
  };
}

/** The whole exported history, followed by every base64 string in it decoded (payloads are base64 JSON). */
function exportedHistory(cli: string, workflowId: string): string {
  const json = execFileSync(
    cli,
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      '--output',
      'json',
      '--address',
      inject('temporalAddress'),
      '--namespace',
      inject('temporalNamespace'),
    ],
    { encoding: 'utf8' },
  );
  const decoded: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') {
      if (value.length >= 4 && value.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
        decoded.push(Buffer.from(value, 'base64').toString('utf8'));
      }
    } else if (Array.isArray(value)) {
      value.forEach(visit);
    } else if (typeof value === 'object' && value !== null) {
      Object.values(value).forEach(visit);
    }
  };
  visit(JSON.parse(json));
  return `${json}\n${decoded.join('\n')}`;
}

function expectNoCanary(where: string, haystack: string): void {
  for (const canary of FORBIDDEN) {
    if (haystack.includes(canary)) {
      const at = haystack.indexOf(canary);
      throw new Error(`${where} contains a canary: …${haystack.slice(Math.max(0, at - 120), at + 80)}…`);
    }
  }
}

it('the canary key and customer appear in no worker log, workflow history or log table', async () => {
  const cli = findTemporalCli();
  expect(cli, 'the temporal CLI exports the histories; run scripts/setup.sh').not.toBeNull();

  const goodQueue = `canary-resend-${randomUUID()}`;
  const wrongKeyQueue = `canary-mailgun-${randomUUID()}`;
  const resendWorker = spawnWorkerProcess(
    workerEnv(goodQueue, { MAIL_PROVIDER: 'resend', MAIL_API_KEY: CANARY_KEY }),
  );
  const mailgunWorker = spawnWorkerProcess(
    workerEnv(wrongKeyQueue, {
      MAIL_PROVIDER: 'mailgun',
      MAILGUN_DOMAIN: 'mg.example.com',
      MAIL_API_KEY: CANARY_WRONG_KEY,
    }),
  );
  workers.push(resendWorker, mailgunWorker);
  await Promise.all([resendWorker.started, mailgunWorker.started]);

  const customer = { customerName: CANARY_NAME, customerEmail: CANARY_ADDRESS };
  const accepted = await createOrder(database.db, customer);
  const dropped = await createOrder(database.db, customer);
  const refused = await createOrder(database.db, { ...customer, customerEmail: CANARY_BAD_ADDRESS });
  const wrongKey = await createOrder(database.db, customer);
  sandbox.queueFault(dropped, { kind: 'accept-then-drop' });

  const start = (orderId: string, taskQueue: string) =>
    client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
  const results = await Promise.allSettled(
    [
      await start(accepted, goodQueue),
      await start(dropped, goodQueue),
      await start(refused, goodQueue),
      await start(wrongKey, wrongKeyQueue),
    ].map((handle) => handle.result()),
  );
  // The paths really were taken.
  expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected']);
  expect(results[1]).toMatchObject({ value: { outcome: 'accepted', attempts: 2 } });
  for (const failed of [results[2], results[3]]) {
    expect((failed as PromiseRejectedResult).reason).toBeInstanceOf(WorkflowFailedError);
  }
  expect(sandbox.messagesFor(accepted)[0]?.to).toBe(CANARY_ADDRESS);
  expect(sandbox.messagesFor(accepted)[0]?.text).toContain(CANARY_NAME);

  for (const worker of [resendWorker, mailgunWorker]) {
    worker.child.kill('SIGTERM');
    await worker.exited;
  }

  // 1. Everything the worker processes printed (stdout and stderr).
  for (const [name, worker] of [
    ['resend worker output', resendWorker],
    ['mailgun worker output', mailgunWorker],
  ] as const) {
    const output = worker.output();
    // It is the real output: the start line and the activities' log lines for these orders.
    expect(output).toContain('"message":"Worker started"');
    expectNoCanary(name, output);
  }
  expect(resendWorker.output()).toContain(accepted);
  // One JSON object per line on stdout (src/workerLog.ts), the SDK's lines as the worker's own: an order's
  // story is found by one search on its id.
  const lines = resendWorker
    .stdout()
    .split('\n')
    .filter((line) => line.trim() !== '');
  const parsed = lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`a worker line that is not one JSON object: ${line}`);
    }
  });
  expect(parsed).toContainEqual(
    expect.objectContaining({ message: 'Order mail send finished', orderId: accepted, outcome: 'accepted' }),
  );

  // 2. Every workflow history, exported as JSON, payloads decoded.
  for (const orderId of [accepted, dropped, refused, wrongKey]) {
    const history = exportedHistory(cli!, orderId);
    // The decoding works: the workflow's input and the activity inputs carry the order id.
    expect(history).toContain(`"orderId":"${orderId}"`);
    expectNoCanary(`history of order ${orderId}`, history);
  }

  // 3. The log tables, every column of every row.
  for (const table of ['order_mail_log', 'order_mail_attempts']) {
    const { rows } = await database.db.query<{ row: string }>(
      `SELECT row_to_json(t)::text AS row FROM ${table} t`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(4);
    expectNoCanary(table, rows.map((row) => row.row).join('\n'));
  }
  // Where the customer must be: the shop's own orders table.
  const { rows } = await database.db.query<{ row: string }>(
    `SELECT row_to_json(o)::text AS row FROM orders o`,
  );
  expect(rows.map((row) => row.row).join('\n')).toContain(CANARY_ADDRESS);
}, 180_000);
