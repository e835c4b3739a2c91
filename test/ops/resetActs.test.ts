// A reset made outside the ops CLI (the Web UI's Reset; here the same API request) leaves an observed reset with
// its reason, written by the new run's claim from Temporal's history under the worker's own login
// (src/activities/resetAct.ts), and no operator act: the workers' role may write none (migration 0057). A reset
// made by `ops retry` is recorded once, as the CLI's 'retry' act. A real worker process under a login of the
// workers' group, so the reader and the grants are as deployed (src/worker.ts); the Web UI's own path is
// test/ui/resetFromWebUi.test.ts.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, inject, it, type ExpectStatic } from 'vitest';
import { listObservedResets, listOperatorActs } from '../../src/db/operatorActs';
import { readMailLog } from '../../src/db/orderMailLog';
import { resetToFirstWorkflowTask } from '../../src/ops/resetToFirstWorkflowTask';
import { retryOrderMail } from '../../src/ops/retryOrderMail';
import { formatStatus } from '../../src/ops/formatOpsOutput';
import type { OpsContext } from '../../src/ops/opsContext';
import { readOrderMailStatus } from '../../src/ops/orderMailStatus';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  closeInReverse,
  createOrder,
  createOutsideLogin,
  openTestServices,
  type OutsideLogin,
  type TestDatabase,
} from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

// The database, sandbox and client only: the worker is the process below (no in-process ones to start).
const closers: (() => Promise<void>)[] = [];
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let worker: WorkerProcess | undefined;
let workerLogin: OutsideLogin | undefined;
const taskQueue = `reset-acts-${randomUUID()}`;

beforeAll(async () => {
  ({ database, sandbox, client } = await openTestServices('reset_acts', closers));
  workerLogin = await createOutsideLogin(database.db, database.connectionString, 'workers');
  await database.db.query(`GRANT order_mail_worker TO ${workerLogin.user}`);
  worker = spawnWorkerProcess({
    DATABASE_URL: workerLogin.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: sandbox.url,
    MAIL_API_KEY: 'sandbox-key',
    // The run's prebuilt bundle, as the image sets it: these tests are about resets, not webpack at start.
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  });
  await worker.started;
}, 120_000);

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await worker?.exited;
  await closeInReverse(closers);
  await workerLogin?.drop();
});

function opsContext(operator: string): OpsContext {
  return {
    db: database.db,
    client,
    namespace: inject('temporalNamespace'),
    taskQueue,
    uiBaseUrl: 'http://localhost:8233',
    operator,
  };
}

/** An order whose mail failed (the sandbox refuses its address), with the address then fixed. */
async function failedThenFixed(expect: ExpectStatic): Promise<{ orderId: string; firstRunId: string }> {
  const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
  await client.workflow
    .execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] })
    .catch(() => undefined);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'rejected' });
  await database.db.query(`UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = $1`, [orderId]);
  return { orderId, firstRunId: (await client.workflow.getHandle(orderId).describe()).runId };
}

// The two side by side (issue 38): each its own order, and every row, act and message it reads is that order's.
it.concurrent(
  'a reset made with the API, as the Web UI makes it, leaves one observed reset with its reason, no act',
  async ({ expect }) => {
    const { orderId, firstRunId } = await failedThenFixed(expect);
    const { newRunId } = await resetToFirstWorkflowTask(client, {
      workflowId: orderId,
      runId: firstRunId,
      reason: 'address fixed, send again',
      identity: 'someone in the Web UI',
    });
    expect(await client.workflow.getHandle(orderId, newRunId).result()).toMatchObject({ result: 'sent' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await listObservedResets(database.db, orderId)).toMatchObject([
      {
        reason: 'address fixed, send again',
        baseRunId: firstRunId,
        newRunId,
        // Temporal's own identity on the reset event, and the worker's login that saw it: nobody's act.
        temporalIdentity: 'history-service',
        recordedBy: workerLogin!.user,
        rowAfter: { state: 'sending' },
      },
    ]);
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);
    // `ops status` shows it, apart from the operators' acts.
    const status = await readOrderMailStatus(opsContext('alice'), orderId);
    expect(status.observedResets).toHaveLength(1);
    expect(status.acts).toEqual([]);
    expect(formatStatus(status)).toMatch(
      new RegExp(
        `reset of run ${firstRunId} into ${newRunId} \\(Temporal identity history-service; recorded by ${workerLogin!.user}\\): address fixed, send again`,
      ),
    );
  },
);

it.concurrent('a reset made by ops retry is recorded once, as the CLI retry act', async ({ expect }) => {
  const { orderId } = await failedThenFixed(expect);
  const retried = await retryOrderMail(opsContext('alice'), { orderId, reason: 'address fixed' });
  expect(retried.kind).toBe('reset');
  expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  // Written by this test's own login (the database's, whatever ctx.operator says); no observed reset.
  const login = (await database.db.query<{ login: string }>('SELECT session_user AS login')).rows[0]!.login;
  expect(await listOperatorActs(database.db, orderId)).toMatchObject([
    { act: 'retry', operator: login, reason: 'address fixed' },
  ]);
  expect(await listObservedResets(database.db, orderId)).toEqual([]);
});
