// Worker Versioning as docs/production.md#upgrades rolls a build out, on the real dev server with the real
// worker and the temporal CLI commands the docs give: a run stays on the build that started it (pinned) across
// a switch of the current version, also once that build's workers are gone; new runs go to the current build;
// a stranded run moves to the current build after its history replays there; `ops retry` of a run of a
// retired build runs on the current one.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { Client } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../../src/cli/ops';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { pinnedTemporalCli } from '../../dev/devtools/findTemporalCli';
import { versionRegistered } from '../../dev/demo/upgradeAct';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOperatorLogin,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type OutsideLogin,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const run = promisify(execFile);
const deploymentName = `mail-${randomUUID().slice(0, 8)}`;
const taskQueue = `test-${randomUUID()}`;
let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let operator: OutsideLogin;
const workers: RunningTestWorker[] = [];

beforeAll(async () => {
  database = await openTestDatabase('worker_versioning');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  operator = await createOperatorLogin(database.db, database.connectionString, 'carol');
});

afterAll(async () => {
  for (const worker of workers) await worker.stop().catch(() => undefined);
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
  await operator?.drop();
});

/** One build of the worker: both halves poll as `deploymentName.buildId`. */
async function startBuild(buildId: string): Promise<RunningTestWorker> {
  const worker = await startTestWorker(
    {
      db: database.db,
      mail,
      settings: testSettings(),
      workerIdentity: `build-${buildId}`,
    },
    { taskQueue, deployment: { deploymentName, buildId } },
  );
  workers.push(worker);
  return worker;
}

/** The temporal CLI against the run's server, as docs/production.md#upgrades gives the commands. */
async function temporal(...args: string[]): Promise<void> {
  args.push('--address', inject('temporalAddress'), '--namespace', inject('temporalNamespace'));
  await run(pinnedTemporalCli(), args, { timeout: 20_000 });
}

async function setCurrent(buildId: string): Promise<void> {
  const args = ['worker', 'deployment', 'set-current-version', '--deployment-name', deploymentName];
  // The server learns a version from its pollers; until then the command is refused, so it is repeated.
  await waitFor(
    `${buildId} to become current`,
    () =>
      temporal(...args, '--build-id', buildId, '--yes').then(
        () => true,
        () => undefined,
      ),
    30_000,
  );
}

async function pinnedBuild(workflowId: string): Promise<string | null> {
  const described = await client.workflowService.describeWorkflowExecution({
    namespace: inject('temporalNamespace'),
    execution: { workflowId },
  });
  const info = described.workflowExecutionInfo?.versioningInfo;
  const override = info?.versioningOverride?.pinned?.version;
  return override?.buildId ?? info?.deploymentVersion?.buildId ?? null;
}

async function ops(...argv: string[]) {
  const err: string[] = [];
  const env = {
    OPS_DATABASE_URL: operator.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: taskQueue,
  };
  const code = await main(argv, env, { out: () => undefined, err: (text) => err.push(text) });
  return { code, err: err.join('\n') };
}

function start(orderId: string) {
  return client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

async function waitHeld(orderId: string): Promise<void> {
  await waitFor(`order ${orderId} held`, async () => {
    const described = await client.workflow.getHandle(orderId).describe();
    return described.typedSearchAttributes.get(OrderMailState) === 'held' ? true : undefined;
  });
}

describe('a build rolled out with Worker Versioning', () => {
  let v1: RunningTestWorker;
  let rejected: string;
  let stranded: string;

  it('a run stays on the build that started it across a switch, also once that build is gone; new runs go to the current build', async () => {
    v1 = await startBuild('v1');
    await setCurrent('v1');

    rejected = await createOrder(database.db, { customerEmail: 'not-an-address' });
    await (await start(rejected)).result().catch(() => undefined);
    expect(await pinnedBuild(rejected)).toBe('v1');

    // Held on v1 (it waits for the resume signal) while v2 becomes current and v1's workers stop.
    expect(await ops('hold', '--reason', 'the rollout')).toMatchObject({ code: 0, err: '' });
    stranded = await createOrder(database.db);
    await start(stranded);
    await waitHeld(stranded);
    await startBuild('v2');
    await setCurrent('v2');
    await v1.stop();
    expect(await ops('resume', '--reason', 'rollout done')).toMatchObject({ code: 0, err: '' });

    const fresh = await createOrder(database.db);
    await expect((await start(fresh)).result()).resolves.toMatchObject({ result: 'sent' });
    expect(await pinnedBuild(fresh)).toBe('v2');

    // Pinned: v2's workers poll the same task queue and still leave it alone.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await pinnedBuild(stranded)).toBe('v1');
    expect((await client.workflow.getHandle(stranded).describe()).status.name).toBe('RUNNING');
    expect(sandbox.messagesFor(stranded)).toHaveLength(0);
  });

  it('a stranded run moves to the current build once its history replays there, and sends once', async () => {
    const history = await client.workflow.getHandle(stranded).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: inject('workflowBundlePath') } },
      history,
      stranded,
    );
    await temporal(
      'workflow',
      'update-options',
      '--query',
      // The visibility attribute writes a version as "<name>:<build id>".
      `TemporalWorkerDeploymentVersion = '${deploymentName}:v1' AND ExecutionStatus = 'Running'`,
      '--versioning-override-behavior',
      'pinned',
      '--versioning-override-deployment-name',
      deploymentName,
      '--versioning-override-build-id',
      'v2',
      '--yes',
    );
    await expect(client.workflow.getHandle(stranded).result()).resolves.toMatchObject({ result: 'sent' });
    expect(await pinnedBuild(stranded)).toBe('v2');
    expect(sandbox.messagesFor(stranded)).toHaveLength(1);
  });

  it('ops retry of a run of a retired build runs on the current build: a reset to the first task carries no pin', async () => {
    await database.db.query(`UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = $1`, [
      rejected,
    ]);
    expect(await ops('retry', rejected, '--reason', 'address corrected')).toMatchObject({ code: 0, err: '' });
    await expect(client.workflow.getHandle(rejected).result()).resolves.toMatchObject({ result: 'sent' });
    expect(await pinnedBuild(rejected)).toBe('v2');
    expect(sandbox.messagesFor(rejected)).toHaveLength(1);
  });

  it("describe-version lists a build's task queue once its workers polled it, none for a build that never did (the upgrade run's check before a switch)", async () => {
    const where = (buildId: string) => ({ deploymentName, buildId, taskQueue });
    expect(await versionRegistered(client, where('v2'))).toBe(true);
    expect(await versionRegistered(client, where('never-started'))).toBe(false);
    expect(await versionRegistered(client, { ...where('v2'), taskQueue: `other-${taskQueue}` })).toBe(false);
  });
});
