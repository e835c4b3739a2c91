// A worker started before its dependencies (a fresh deployment, a rolling restart of the database): it must
// not exit. It waits, says so on /readyz, and serves within seconds once Postgres and Temporal are up; orders
// placed and started meanwhile each get one mail. Real processes and servers: the worker process points at
// ports where nothing listens yet, then an embedded Postgres and a Temporal dev server start on those ports.
import { Client, Connection } from '@temporalio/client';
import { afterAll, inject, it, type ExpectStatic } from 'vitest';
import { migrate } from '../../src/db/migrator';
import { readMailLog } from '../../src/db/orderMailLog';
import { insertOrder } from '../../dev/devtools/shopOrders';
import { createDatabase, type Database } from '../../src/db/pool';
import { startTemporalDevServer, type TemporalDevServer } from '../../dev/devtools/devServer';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../../dev/devtools/embeddedPostgres';
import { getFreePort } from '../../src/shared/freePort';
import { devServerSearchAttributes } from '../../dev/devtools/searchAttributeFlags';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { sampleOrder, waitFor } from '../support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from '../support/workerProcess';

const WAIT_BEFORE_DEPENDENCIES_MS = 20_000;
const ORDERS = 5;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

async function readiness(url: string): Promise<{ status: number; body: string } | null> {
  try {
    const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return null; // The HTTP port is not up yet.
  }
}

/** Polls /readyz for `ms`, requiring the worker to stay alive and not ready; returns what it said last. */
async function stayNotReady(
  expect: ExpectStatic,
  worker: WorkerProcess,
  url: string,
  ms: number,
): Promise<string> {
  const until = Date.now() + ms;
  let last = '';
  let exited: number | null | undefined;
  void worker.exited.then((code) => (exited = code));
  while (Date.now() < until) {
    expect(exited, `the worker exited while waiting:\n${worker.output()}`).toBeUndefined();
    const ready = await readiness(url);
    if (ready !== null) {
      expect(ready.status).toBe(503);
      last = ready.body;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return last;
}

// The two run side by side (issue 38): each its own process, ports and servers; the second only reads its own
// worker's exit and output.
it.concurrent(
  'a worker started 20 s before Postgres and Temporal serves once they are up, and again after losing Temporal; no order is lost',
  async ({ expect }) => {
    const postgres: EmbeddedPostgresServer = await startEmbeddedPostgres();
    cleanups.push(() => postgres.stop());
    // The deployment's migration step ran (a worker runs no DDL, and refuses a schema not migrated to its build).
    await migrate(postgres.connectionString);
    const sandbox: MailSandbox = await startMailSandbox();
    cleanups.push(() => sandbox.close());
    const temporalPort = await getFreePort('127.0.0.1');
    const httpUrl = `http://127.0.0.1:${await getFreePort('127.0.0.1')}`;
    const taskQueue = 'waits-for-dependencies';

    let worker: WorkerProcess | undefined;
    let waitingForPostgres = '';
    // Postgres goes away: from here on nothing listens on its port, nor on Temporal's.
    await postgres.restart({
      whileDown: async () => {
        worker = spawnWorkerProcess({
          DATABASE_URL: postgres.connectionString,
          TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
          TEMPORAL_NAMESPACE: 'default',
          MAIL_DEPLOYMENT_ID: 'default',
          TEMPORAL_TASK_QUEUE: taskQueue,
          WORKER_HTTP_BIND_ADDRESS: httpUrl.replace('http://', ''),
          MAIL_API_BASE_URL: sandbox.url,
          MAIL_API_KEY: 'sandbox-key',
          // The prebuilt bundle, as the image sets it: "ready within seconds" is about the dependencies, and
          // bundling at each connection took over 30 s when CI's other tests loaded the machine.
          WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
        });
        const started = worker;
        started.started.catch(() => undefined);
        cleanups.push(async () => {
          started.child.kill('SIGKILL');
          await started.exited;
        });
        waitingForPostgres = await stayNotReady(expect, started, httpUrl, WAIT_BEFORE_DEPENDENCIES_MS);
      },
    });
    const running = worker!;
    // It says where it looks and which setting to change: the address and the variable, never the password.
    expect(waitingForPostgres).toMatch(
      new RegExp(
        `not ready: waiting for Postgres at 127\\.0\\.0\\.1:${new URL(postgres.connectionString).port}/\\w+ \\(DATABASE_URL\\)`,
      ),
    );

    // Postgres is up. The shop takes orders.
    const db: Database = createDatabase({
      connectionString: postgres.connectionString,
      applicationName: 'test',
    });
    cleanups.push(() => db.close());
    const orderIds: string[] = [];
    for (let i = 0; i < ORDERS; i++) orderIds.push(await insertOrder(db, sampleOrder()));
    await waitFor('the worker to wait for Temporal instead', async () => {
      const ready = await readiness(httpUrl);
      return ready?.body.includes('waiting for Temporal at') ? ready : undefined;
    });

    const temporal: TemporalDevServer = await startTemporalDevServer({
      port: temporalPort,
      uiPort: null,
      namespace: 'default',
      searchAttributes: devServerSearchAttributes(),
    });
    cleanups.push(() => temporal.stop());
    const connection = await Connection.connect({ address: temporal.address });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: 'default' });
    // The order service starts each order's mail as soon as Temporal takes the start.
    const handles = await Promise.all(
      orderIds.map((orderId) =>
        client.workflow.start(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
      ),
    );

    // Serving within seconds: the retry backoff is capped at 5 s. The deadline has headroom for a busy machine.
    await waitFor(
      'the worker to be ready',
      async () => ((await readiness(httpUrl))?.status === 200 ? true : undefined),
      30_000,
    );
    const results = await Promise.all(handles.map((handle) => handle.result()));
    for (const [index, orderId] of orderIds.entries()) {
      expect(results[index]).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
    }

    // Losing Temporal while running: not ready meanwhile, no exit, and serving again once it is back.
    await temporal.stop();
    await waitFor('the worker to report Temporal missing', async () => {
      const ready = await readiness(httpUrl);
      return ready?.status === 503 && /Temporal/.test(ready.body) ? ready : undefined;
    });
    const again = await startTemporalDevServer({
      port: temporalPort,
      uiPort: null,
      namespace: 'default',
      searchAttributes: devServerSearchAttributes(),
    });
    cleanups.push(() => again.stop());
    const later = await insertOrder(db, sampleOrder());
    const result = await client.workflow.execute(orderConfirmationMail, {
      workflowId: later,
      taskQueue,
      args: [later],
    });
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted' });
    expect(sandbox.messagesFor(later)).toHaveLength(1);
    // Ready again. Polled, not probed once: each probe asks Postgres and Temporal with a deadline under a
    // second, which one probe on a loaded machine can miss (a fresh-clone CI run saw a single 503 here).
    await waitFor(
      'the worker to be ready again',
      async () => ((await readiness(httpUrl))?.status === 200 ? true : undefined),
      30_000,
    );

    running.child.kill('SIGTERM');
    expect(await running.exited).toBe(0);
  },
  240_000,
);

it.concurrent('a configuration error still ends the worker at once, with its message', async ({ expect }) => {
  const worker = spawnWorkerProcess({
    DATABASE_URL: 'mysql://nowhere/shop',
    TEMPORAL_ADDRESS: '127.0.0.1:1',
    MAIL_API_BASE_URL: 'http://127.0.0.1:1',
    MAIL_API_KEY: 'k',
  });
  worker.started.catch(() => undefined);
  expect(await worker.exited).toBe(1);
  expect(worker.output()).toMatch(/DATABASE_URL must be a postgres: or postgresql:\/\/ URL/);
});
