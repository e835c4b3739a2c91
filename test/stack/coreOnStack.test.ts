// The core's end-to-end paths on the production topology: the Temporal server on Postgres (not the dev
// server), three worker processes on the worker image's Node (src/worker.ts), the client connecting through
// envconfig. Each path is checked on the log row, the sandbox's messages and the workflow, and the
// workers' /metrics must count what happened.
import { WorkflowFailedError } from '@temporalio/client';
import { readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrderConfirmationMail } from '../../src/client';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { ORDER_MAIL_METRICS } from '../../src/metrics/orderMailMetrics';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { STACK_WORKER_USER } from '../../dev/stack/stackRoles';
import { stackToolsDirectory } from '../../dev/devtools/toolFolders';
import { createOrder } from '../support/testKit';
import { startTestStack, sumMetric, workerUrls, type TestStack } from './stackKit';

let testStack: TestStack;
let sandbox: MailSandbox;

beforeAll(async () => {
  testStack = await startTestStack({ workers: 3, uiPort: null });
  sandbox = testStack.stack.sandbox;
});
afterAll(async () => {
  await testStack?.close();
});

async function sendCount(outcome: string): Promise<number> {
  return sumMetric(workerUrls(testStack.stack), ORDER_MAIL_METRICS.sends, { outcome, provider: 'generic' });
}

describe('the core on the Temporal server with Postgres persistence and three worker processes', () => {
  it('runs on the stack it claims to: Postgres persistence, three ready workers polling the queue', async () => {
    const { stack } = testStack;
    const info = await testStack.client.workflowService.getSystemInfo({});
    expect(info.serverVersion).toBe(stack.settings.temporalServerVersion);
    // The visibility store the server reports is the one the stack configured (not the dev server's sqlite).
    const cluster = await testStack.client.workflowService.getClusterInfo({});
    expect(cluster.visibilityStore).toContain('postgres');
    expect(stack.workers?.workers).toHaveLength(3);
    // On the pinned Node (deploy/stack.env's NODE_VERSION), whatever Node runs the test.
    const pinnedNode = realpathSync(
      path.join(stackToolsDirectory(), `node-${stack.settings.nodeVersion}`, 'bin', 'node'),
    );
    for (const worker of stack.workers?.workers ?? []) {
      expect(readlinkSync(`/proc/${worker.process.pid}/exe`)).toBe(pinnedNode);
    }
    for (const url of workerUrls(stack)) {
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
    }
    const pollers = await sumMetric(workerUrls(stack), 'temporal_num_pollers', {
      task_queue: 'order-confirmation-mail',
      poller_type: 'activity_task',
    });
    expect(pollers).toBeGreaterThan(0);
    // Least privilege, as in production: the workers' sessions are the workers' login, not the admin that
    // made the stack, and that login is neither a superuser nor the owner of a table.
    const { rows } = await testStack.db.query<{ user: string; superuser: boolean; owns: boolean }>(
      `SELECT DISTINCT a.usename AS user, r.rolsuper AS superuser,
              EXISTS (SELECT 1 FROM pg_tables t WHERE t.tableowner = a.usename) AS owns
         FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
        WHERE a.datname = current_database() AND a.application_name LIKE 'order-mail-worker %'`,
    );
    expect(rows).toEqual([{ user: STACK_WORKER_USER, superuser: false, owns: false }]);
  });

  it('accepted: one message, the row sent with the provider id, and the accepted counter moves', async () => {
    const acceptedBefore = await sendCount('accepted');
    const orderId = await createOrder(testStack.db);
    const started = await startOrderConfirmationMail(testStack.client, orderId);
    expect(started.status).toBe('started');

    const result: unknown = await testStack.client.workflow.getHandle(orderId).result();
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    const row = await readMailLog(testStack.db, orderId);
    expect(row).toMatchObject({ state: 'sent', outcome: 'accepted', attempts: 1 });
    expect(row?.providerMessageId).toBe(sandbox.messagesFor(orderId)[0]?.id);
    expect(await sendCount('accepted')).toBe(acceptedBefore + 1);
  });

  it('accept-then-drop: the unknown outcome waits the settle delay and is verified accepted by the lookup, one message, counted as verified', async () => {
    // The stack's workers run with the defaults: the generic API has a lookup (the sandbox plays it), so
    // verification is on, with the gateway contract's 30 s settle delay.
    const unknownBefore = await sendCount('unknown');
    const settledBefore = await sumMetric(workerUrls(testStack.stack), ORDER_MAIL_METRICS.unknownOutcomes, {
      settled_by: 'verified-accepted',
      verification: 'lookup',
    });
    const orderId = await createOrder(testStack.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await startOrderConfirmationMail(testStack.client, orderId);

    const result: unknown = await testStack.client.workflow.getHandle(orderId).result();
    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(1);
    expect(result).toMatchObject({
      result: 'sent',
      outcome: 'accepted',
      attempts: 1,
      providerMessageId: messages[0]!.id,
    });
    expect(await readMailLog(testStack.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      verification: 'lookup',
    });
    expect(await sendCount('unknown')).toBe(unknownBefore + 1);
    expect(
      await sumMetric(workerUrls(testStack.stack), ORDER_MAIL_METRICS.unknownOutcomes, {
        settled_by: 'verified-accepted',
        verification: 'lookup',
      }),
    ).toBe(settledBefore + 1);
  });

  it('rejected: the workflow fails with MailRejected, the row is failed with the status, nothing was sent', async () => {
    const rejectedBefore = await sendCount('rejected');
    const orderId = await createOrder(testStack.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 422 });
    await startOrderConfirmationMail(testStack.client, orderId);

    const failure = await testStack.client.workflow
      .getHandle(orderId)
      .result()
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toMatchObject({ type: 'MailRejected' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    expect(await readMailLog(testStack.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'rejected',
      httpStatus: 422,
    });
    expect(await sendCount('rejected')).toBe(rejectedBefore + 1);
  });

  it('spreads the work of many orders over more than one worker process, one message each', async () => {
    const orderIds: string[] = [];
    for (let index = 0; index < 30; index++) orderIds.push(await createOrder(testStack.db));
    await Promise.all(orderIds.map((orderId) => startOrderConfirmationMail(testStack.client, orderId)));
    await Promise.all(orderIds.map((orderId) => testStack.client.workflow.getHandle(orderId).result()));

    const recordedBy = new Set<string>();
    for (const orderId of orderIds) {
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      for (const attempt of await listAttempts(testStack.db, orderId)) recordedBy.add(attempt.recordedBy);
    }
    // Worker identities are pid@host: several of them means several processes did the work.
    expect(recordedBy.size).toBeGreaterThan(1);
  });

  it('the stuck-sending gauge counts a row left in sending past the send timeout, on every worker', async () => {
    const urls = workerUrls(testStack.stack);
    const orderId = await createOrder(testStack.db);
    // A claim of a run that vanished two hours ago: what G2 says must never stay unnoticed.
    await testStack.db.query(
      `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at)
       VALUES ($1, 'sending', 1, $2, now() - interval '2 hours', now() - interval '2 hours')`,
      [orderId, `default/${orderId}/vanished-run`],
    );
    try {
      // Each worker reads the count from Postgres at most once per WORKER_GAUGE_REFRESH_INTERVAL_MS
      // (15 s by default), so all three report it within one interval of the insert.
      expect(await waitForMetricSum(urls, urls.length)).toBe(urls.length);
    } finally {
      await testStack.db.query('DELETE FROM order_mail_log WHERE order_id = $1', [orderId]);
    }
    expect(await waitForMetricSum(urls, 0)).toBe(0);
  });
});

/** The workers' summed stuck-sending gauge once it equals `expected`, or its last value after 40 s. */
async function waitForMetricSum(urls: string[], expected: number): Promise<number> {
  const deadline = Date.now() + 40_000;
  for (;;) {
    const sum = await sumMetric(urls, ORDER_MAIL_METRICS.overdueSending);
    if (sum === expected || Date.now() > deadline) return sum;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
