// A worker process gets SIGTERM while its send is in flight (the sandbox has the message and answers late).
// The send must finish, AND its outcome must be recorded before the process exits: the record runs in the
// workflow's next workflow task, so a worker that stopped taking workflow tasks together with activity tasks
// would leave the row in 'sending' until another worker came by. Here no other worker ever comes.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  waitFor,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess } from '../support/workerProcess';

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;

beforeAll(async () => {
  database = await openTestDatabase('stopped');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
});
afterAll(async () => {
  await client.connection.close();
  await sandbox.close();
  await database.close();
});

it('SIGTERM mid-send with one worker: the send finishes and its row is terminal before the process exits', async () => {
  const taskQueue = `stopped-${randomUUID()}`;
  const orderId = await createOrder(database.db);
  // The sandbox keeps the message at once and answers 202 only 3 s later: a send in flight at SIGTERM.
  sandbox.queueFault(orderId, { kind: 'accept-then-hang', ms: 3_000 });

  const worker = spawnWorkerProcess({
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    MAIL_HEADERS_TIMEOUT_MS: '8000',
    MAIL_OVERALL_TIMEOUT_MS: '9000',
    SEND_ACTIVITY_TIMEOUT_MS: '15000',
    WORKER_SHUTDOWN_GRACE_MS: '30000',
  });
  try {
    await worker.started;
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue,
      args: [orderId],
    });
    await waitFor('the send to reach the sandbox', async () =>
      sandbox.messagesFor(orderId).length > 0 ? true : undefined,
    );
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);

    // The process is gone and no other worker polls this queue: whatever the row says now, it said on exit.
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 1,
    });
    expect(await listAttempts(database.db, orderId)).toMatchObject([{ state: 'sent', outcome: 'accepted' }]);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  } finally {
    worker.child.kill('SIGKILL');
  }
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
}, 120_000);
