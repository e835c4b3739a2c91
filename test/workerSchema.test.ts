// A real worker process (src/worker.ts, as `npm start` runs it) with the workers' DDL-less role: before the
// migration step ran it refuses to start, at once and saying what to run; after `npm run db:migrate` ran as
// the migration role it starts and sends an order's mail once.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrate } from '../src/db/migrator';
import { readMailLog } from '../src/db/orderMailLog';
import { orderConfirmationMail } from '../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../packages/sandbox/src/mailSandbox';
import type { Client } from '@temporalio/client';
import {
  connectTestClient,
  createOrder,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
} from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';
import { inject } from 'vitest';

let database: LeastPrivilegeDatabase;
let sandbox: MailSandbox;
let client: Client;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('worker_schema');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
});
afterAll(async () => {
  for (const worker of workers) {
    worker.child.kill('SIGKILL');
    await worker.exited;
  }
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
});

function startWorker(taskQueue: string): WorkerProcess {
  const worker = spawnWorkerProcess({
    DATABASE_URL: database.workerUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  worker.started.catch(() => undefined);
  workers.push(worker);
  return worker;
}

it('refuses to start before the migrations ran, and starts and sends once after', async () => {
  const taskQueue = `worker-schema-${Date.now()}`;
  const early = startWorker(taskQueue);
  // A configuration error: it exits at once instead of waiting.
  expect(await early.exited, early.output()).toBe(1);
  expect(early.output()).toContain('Run the migrations first');
  expect(early.output()).toContain('npm run db:migrate');

  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
  const orderId = await createOrder(database.admin);
  const worker = startWorker(taskQueue);
  await worker.started;
  const result = await client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
  });
  expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  expect(await readMailLog(database.admin, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
}, 120_000);
