// A real worker process (src/worker.ts) with the shop's templates (MAIL_TEMPLATE_DIR): a template that fails its
// checks stops the start, every problem named and nothing sent; a good one is what the customer receives, and
// the attempt names it. Real Postgres, Temporal and the sandbox over loopback.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { orderConfirmationMail } from '../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../packages/sandbox/src/mailSandbox';
import { connectTestClient, createOrder, openTestDatabase, type TestDatabase } from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let dir: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openTestDatabase('worker_templates');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
  dir = mkdtempSync(path.join(tmpdir(), 'worker-templates-'));
});
afterAll(async () => {
  for (const worker of workers) {
    worker.kill('SIGKILL');
    await worker.exited;
  }
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
  rmSync(dir, { recursive: true, force: true });
});

function templateDir(name: string, files: Record<string, string>): string {
  const at = mkdtempSync(path.join(dir, `${name}-`));
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(at, file), content);
  return at;
}

const ENGLISH = {
  'mail.json': '{ "name": "en-worker", "locale": "en-US", "timeZone": "UTC" }\n',
  'subject.liquid': 'Thanks for order {{ order.id }}\n',
  'text.liquid': 'Hi {{ order.customerName }}, your total is {{ order.total | money }}.\n',
  'html.liquid': '<p>Hi {{ order.customerName }}, your total is {{ order.total | money }}.</p>\n',
};

function startWorker(taskQueue: string, templates: string): WorkerProcess {
  const worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_TEMPLATE_DIR: templates,
  });
  worker.started.catch(() => undefined);
  workers.push(worker);
  return worker;
}

it('refuses to start on a template that fails its checks, naming every problem; nothing is sent', async () => {
  const broken = templateDir('broken', {
    ...ENGLISH,
    'subject.liquid': 'Thanks\r\nBcc: everyone@example.com\n',
    'text.liquid': 'Hi {{ order.loyaltyTier }}\n',
    'html.liquid': '<p>{{ order.customerName | raw }}</p>\n',
  });
  const orderId = await createOrder(database.db);
  const worker = startWorker(`worker-templates-broken-${Date.now()}`, broken);
  expect(await worker.exited, worker.output()).toBe(1);
  expect(worker.output()).toContain('subject.liquid: the subject must be one line');
  expect(worker.output()).toContain('unknown field order.loyaltyTier');
  expect(worker.output()).toContain('undefined filter: raw');
  expect(sandbox.messagesFor(orderId)).toEqual([]);
}, 60_000);

it('sends the mail its templates render, and the attempt records the template', async () => {
  const taskQueue = `worker-templates-${Date.now()}`;
  const worker = startWorker(taskQueue, templateDir('english', ENGLISH));
  await worker.started;
  const orderId = await createOrder(database.db, { customerName: 'Ada Lovelace' });
  const result = await client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
  });
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
  const messages = sandbox.messagesFor(orderId);
  expect(messages).toHaveLength(1);
  expect(messages[0]).toMatchObject({
    subject: `Thanks for order ${orderId}`,
    text: 'Hi Ada Lovelace, your total is ¥8,200.\n',
    html: '<p>Hi Ada Lovelace, your total is ¥8,200.</p>\n',
  });
  const { rows } = await database.db.query(
    `SELECT template_name FROM order_mail_attempts WHERE order_id = $1`,
    [orderId],
  );
  expect(rows).toEqual([{ template_name: 'en-worker' }]);
}, 120_000);
