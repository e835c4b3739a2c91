// `npm run start-mail` as a cron job runs it: ids on stdin. No ids is a mistake (an empty export, a broken
// pipe), never a silent success: the command says so and exits non-zero, and starts nothing.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { expect, inject, it } from 'vitest';
import { readMailLog } from '../../src/db/orderMailLog';
import { FailureType } from '../../src/shared/failures';
import { getFreePort } from '../../src/shared/freePort';
import { ORDER_MAIL_ATTRIBUTES_AT_START, ORDER_MAIL_WORKFLOW_TYPE } from '../../src/shared/workflowContract';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
} from '../support/testKit';
import { productCommand } from '../support/workerProcess';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
// The tests share nothing (own processes, orders and queues) and mostly wait (a connect that times out, a
// run's bound): they run side by side.

function startMail(
  stdin: string | null,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string; stdout: string }> {
  // The command compiled once for the run, as `npm run start-mail` runs dist/cli/start-mail.js.
  const child = spawn(process.execPath, [...productCommand('cli/start-mail'), ...args], {
    cwd: PROJECT_ROOT,
    // The run's real Temporal server: a command that went on to connect would succeed, not fail by accident.
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: 'start-mail-cli-test',
      ...env,
    },
    stdio: [stdin === null ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  if (stdin !== null) child.stdin?.end(stdin);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr, stdout })));
}

it.concurrent('ids from /dev/null: a clear error and a non-zero exit, nothing started', async () => {
  const { code, stderr, stdout } = await startMail(null);
  expect(code).toBe(2);
  expect(stderr).toMatch(/no order id/i);
  expect(stdout).toBe('');
});

it.concurrent('only empty lines on stdin: the same', async () => {
  const { code, stderr, stdout } = await startMail('\n  \n\n');
  expect(code).toBe(2);
  expect(stderr).toMatch(/no order id/i);
  expect(stdout).toBe('');
});

it.concurrent(
  'a Temporal that does not answer: the error names the address and the variable it came from',
  async () => {
    // A port on loopback where nothing listens (taken, then released).
    const address = `127.0.0.1:${await getFreePort()}`;
    const { code, stderr, stdout } = await startMail(null, ['1'], { TEMPORAL_ADDRESS: address });
    expect(code).toBe(1);
    expect(stderr).toContain(`Cannot reach Temporal at ${address} (TEMPORAL_ADDRESS)`);
    expect(stdout).toBe('');
  },
);

it.concurrent(
  'an order whose run closed without a mail: exit 3, its run status and where to look, distinct from 0 and 1',
  async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    const client = new Client({ connection, namespace: inject('temporalNamespace') });
    try {
      // A run of the mail workflow that closed before it sent anything (here: terminated before any worker ran it).
      const orderId = String(700_000_000_000 + Math.floor(Math.random() * 1_000_000_000));
      const handle = await client.workflow.start(ORDER_MAIL_WORKFLOW_TYPE, {
        workflowId: orderId,
        taskQueue: `start-mail-closed-${orderId}`,
        args: [orderId],
      });
      await handle.terminate('test: closed without a mail');
      const { code, stdout, stderr } = await startMail(null, [orderId]);
      expect(code).toBe(3);
      expect(stdout).toContain(`${orderId}\talready-started\trun ${handle.firstExecutionRunId}\tTERMINATED`);
      expect(stderr).toContain(`npm run ops -- status ${orderId}`);
      // Nothing was started again: the closed run is still the order's only run.
      expect((await client.workflow.getHandle(orderId).describe()).runId).toBe(handle.firstExecutionRunId);
    } finally {
      await connection.close();
    }
  },
);

it.concurrent(
  'an order that never exists: its run ends OrderNotFound after its bound, and start-mail then exits 3, starting nothing',
  async () => {
    const database = await openTestDatabase('start_mail_cli');
    const client = await connectTestClient();
    // Never used: the run ends before any send.
    const mail = testMailClient('http://127.0.0.1:9');
    const worker = await startTestWorker({ db: database.db, mail, settings: testSettings() });
    try {
      // An id past this database's orders, never inserted.
      const orderId = String(BigInt(await createOrder(database.db)) + 1_000n);
      const handle = await client.workflow.start(ORDER_MAIL_WORKFLOW_TYPE, {
        workflowId: orderId,
        taskQueue: worker.taskQueue,
        // A 1 s bound for the wait instead of the 5 minutes a start gets by default.
        args: [orderId, { orderVisibleWaitMs: 1_000 }],
        typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
      });
      const failure = await handle.result().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(WorkflowFailedError);
      expect((failure as WorkflowFailedError).cause).toMatchObject({ type: FailureType.OrderNotFound });

      const { code } = await startMail(null, [orderId], { TEMPORAL_TASK_QUEUE: worker.taskQueue });
      expect(code).toBe(3);
      // Nothing was started again and nothing claimed: the failed run is still the order's only run, and no row.
      const described = await client.workflow.getHandle(orderId).describe();
      expect(described.status.name).toBe('FAILED');
      expect(described.runId).toBe(handle.firstExecutionRunId);
      expect(await readMailLog(database.db, orderId)).toBeNull();
    } finally {
      await worker.stop();
      await mail.close();
      await client.connection.close();
      await database.close();
    }
  },
);
