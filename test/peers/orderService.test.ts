// Starting the workflow from another language, by its contract (docs/workflow-contract.md): the Python order
// service (dev/peers/python/order_service.py, Temporal's Python SDK) and the `temporal workflow start` line,
// as real processes against the run's dev server, with our real TypeScript worker, Postgres and the sandbox.
// Each order is started several times at once; what must hold is one workflow run and one mail per order.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { findTemporalCli } from '../../dev/devtools/findTemporalCli';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import { spawnPythonPeer, type PeerProcess } from '../../dev/peers/pythonPeers';

const WORKFLOW_TYPE = 'orderConfirmationMail';
const run = promisify(execFile);

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;
let running: PeerProcess[] = [];

beforeAll(async () => {
  database = await openTestDatabase('python_order_service');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  worker = await startTestWorker({ db: database.db, mail, settings: testSettings() });
});

afterEach(async () => {
  await Promise.all(running.map((peer) => peer.stop()));
  running = [];
});

afterAll(async () => {
  await worker?.stop();
  await client?.connection.close();
  await mail?.close();
  await sandbox?.close();
  await database?.close();
});

interface StartAttempt {
  order_id: string;
  copy: number;
  status: 'started' | 'already-started' | 'error';
  run_id?: string | null;
  error?: string;
}

/** Runs order_service.py to its end; returns its exit code and one record per start attempt it made. */
async function runOrderService(
  orderIds: string[],
  copies: number,
): Promise<{ code: number | null; attempts: StartAttempt[]; output: string }> {
  const peer = spawnPythonPeer(
    'order-service',
    'order_service.py',
    ['--copies', String(copies), ...orderIds],
    {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: worker.taskQueue,
    },
  );
  running.push(peer);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`order_service.py still running:\n${peer.output()}`)), 50_000);
  });
  try {
    const code = await Promise.race([peer.exited, deadline]);
    return { code, attempts: peer.events() as unknown as StartAttempt[], output: peer.output() };
  } finally {
    clearTimeout(timer);
  }
}

async function rowsOf(orderIds: string[]) {
  const { rows } = await database.db.query<{ orderId: string; state: string; attempts: number }>(
    `SELECT order_id::text AS "orderId", state, attempts FROM order_mail_log WHERE order_id = ANY($1::bigint[])`,
    [orderIds],
  );
  return new Map(rows.map((row) => [row.orderId, { state: row.state, attempts: row.attempts }]));
}

describe('the workflow started from Python (temporalio) and from the temporal CLI', () => {
  it('starts 10 orders 3 times each at once: one started and two already-started per order, one run, one mail', async () => {
    const orderIds: string[] = [];
    for (let i = 0; i < 10; i += 1) orderIds.push(await createOrder(database.db));

    const first = await runOrderService(orderIds, 3);
    expect(first.code, first.output).toBe(0);
    expect(first.attempts).toHaveLength(30);
    for (const orderId of orderIds) {
      const attempts = first.attempts.filter((attempt) => attempt.order_id === orderId);
      const started = attempts.filter((attempt) => attempt.status === 'started');
      expect(started, first.output).toHaveLength(1);
      expect(attempts.filter((attempt) => attempt.status === 'already-started')).toHaveLength(2);

      const handle = client.workflow.getHandle(orderId);
      await handle.result();
      // The latest run of the id is the one the service reported as started: no copy started a second run.
      const description = await handle.describe();
      expect(description.type).toBe(WORKFLOW_TYPE);
      expect(description.runId).toBe(started[0]!.run_id);
      expect(description.status.name).toBe('COMPLETED');
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }
    const rows = await rowsOf(orderIds);
    for (const orderId of orderIds) expect(rows.get(orderId)).toEqual({ state: 'sent', attempts: 1 });

    // Started again after the runs closed (a redelivered event a minute later): nothing new.
    const again = await runOrderService(orderIds, 2);
    expect(again.code, again.output).toBe(0);
    expect(new Set(again.attempts.map((attempt) => attempt.status))).toEqual(new Set(['already-started']));
    for (const orderId of orderIds) {
      expect((await client.workflow.getHandle(orderId).describe()).runId).toBe(
        first.attempts.find((attempt) => attempt.order_id === orderId && attempt.status === 'started')!
          .run_id,
      );
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }
  });

  it('refuses to read a workflow of another type under the order id as already started: an error, no mail', async () => {
    const orderId = await createOrder(database.db);
    // Something else in the namespace took the id; no worker polls its queue, so it stays running.
    const other = await client.workflow.start('invoiceReminder', {
      workflowId: orderId,
      taskQueue: `nobody-polls-${randomUUID()}`,
      args: [],
    });
    try {
      const result = await runOrderService([orderId], 2);
      expect(result.code, result.output).toBe(1);
      expect(result.attempts.map((attempt) => attempt.status)).toEqual(['error', 'error']);
      for (const attempt of result.attempts) {
        expect(attempt.error).toContain('WorkflowIdHeldError');
        expect(attempt.error).toContain('invoiceReminder');
      }
      const description = await client.workflow.getHandle(orderId).describe();
      expect(description.type).toBe('invoiceReminder');
      expect(description.runId).toBe(other.firstExecutionRunId);
      expect(sandbox.messagesFor(orderId)).toHaveLength(0);
      expect((await rowsOf([orderId])).size).toBe(0);
    } finally {
      await other.terminate('test cleanup');
    }
  });

  it('starts an order with the documented `temporal workflow start` line, twice at once: one run, one mail', async () => {
    const cli = findTemporalCli();
    if (cli === null) throw new Error('the temporal CLI is missing: run bash scripts/setup.sh');
    const orderId = await createOrder(database.db);
    // The line of docs/workflow-contract.md, with this test's server, namespace and task queue.
    const connection = ['--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace')];
    const line = [
      ...['workflow', 'start', ...connection, '--type', WORKFLOW_TYPE, '--task-queue', worker.taskQueue],
      ...['--workflow-id', orderId, '--input', JSON.stringify(orderId)],
      ...['--id-reuse-policy', 'RejectDuplicate', '--id-conflict-policy', 'Fail', '--fail-existing'],
      ...['--output', 'json'],
    ];
    const starts = await Promise.allSettled([
      run(cli, line, { timeout: 30_000 }),
      run(cli, line, { timeout: 30_000 }),
    ]);
    expect(starts.map((start) => start.status).sort()).toEqual(['fulfilled', 'rejected']);
    const started = starts.find((start) => start.status === 'fulfilled')!;
    const runId = (JSON.parse(started.value.stdout) as { runId: string }).runId;
    // Exit 1 and "already running" (or "already finished" once the run closed) is how the CLI says it.
    const refused = starts.find((start) => start.status === 'rejected')!;
    expect(String((refused.reason as { stderr?: string }).stderr)).toMatch(/already (running|finished)/);

    const handle = client.workflow.getHandle(orderId);
    await handle.result();
    const description = await handle.describe();
    expect(description.type).toBe(WORKFLOW_TYPE);
    expect(description.runId).toBe(runId);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect((await rowsOf([orderId])).get(orderId)).toEqual({ state: 'sent', attempts: 1 });

    // Why the line needs --fail-existing: without it the CLI exits 0 for an id already taken and prints the
    // existing run, under the type it was asked for, whatever type that run really has.
    const withoutFlag = line.filter((argument) => argument !== '--fail-existing');
    withoutFlag[withoutFlag.indexOf(WORKFLOW_TYPE)] = 'someOtherType';
    const silent = await run(cli, withoutFlag, { timeout: 30_000 });
    expect(JSON.parse(silent.stdout)).toMatchObject({ runId, type: 'someOtherType' });
    expect((await handle.describe()).type).toBe(WORKFLOW_TYPE);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});
