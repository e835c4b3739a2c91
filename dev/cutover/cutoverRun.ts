// The cut-over run (`npm run cutover`, docs/adoption.md): the case study's system moves to this service while
// both run on the same orders. Real processes throughout: embedded Postgres holding the shop's tables as the
// case study made them, its Redis queue and Python mail workers (dev/peers/python/case_study_worker.py), a
// Temporal dev server, our worker processes, and the HTTP mail sandbox drawing faults (accept-then-drop
// included) for both sides. The steps:
//   1. the old workers alone take the shop's jobs from the queue;
//   2. while they run, `migrate --adopt` adopts their order_mail_log (they go on, on the adopted table);
//   3. our workers start and the new order service starts the mail of EVERY order: at once for the orders
//      already queued (sent, held or still waiting for an old worker), and from then on with each new order's
//      job, every other order with our side leading by NEW_SIDE_LEAD_MS: both sides race on every order;
//   4. the old workers drain their queue and stop; every workflow closes; the reconciliation sweep settles what
//      an old worker left 'sending' (a 5xx, which the case study does not handle);
//   5. an operator retries (`ops retry`) the orders left failed: a row failed on the old side after its last
//      queue attempt, whose workflow had found it held by the old worker.
// Then the invariants: no order has two messages, every order has a row and no row is 'sending'.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { startOrderConfirmationMail } from '../../src/client';
import { migrate } from '../../src/db/migrator';
import { insertOrder } from '../devtools/shopOrders';
import { createDatabase, type Database } from '../../src/db/pool';
import { retryOrderMail } from '../../src/ops/retryOrderMail';
import type { orderConfirmationMail, OrderMailResult } from '../../src/workflows/orderConfirmationMail';
import { startTemporalDevServer } from '../devtools/devServer';
import { releaseEmbeddedPostgresSignalHooks, startEmbeddedPostgres } from '../devtools/embeddedPostgres';
import { devServerSearchAttributes } from '../devtools/searchAttributeFlags';
import { faultRates, PROFILES } from '../demo/profiles';
import type { FaultMix } from '../demo/runOptions';
import { startRunSweeps } from '../demo/sweep';
import { startWorkerFleet, type WorkerFleet } from '../demo/workerFleet';
import { spawnPythonPeer, PYTHON_PEERS_DIRECTORY, type PeerProcess } from '../peers/pythonPeers';
import { startRedisServer, type RedisServer } from '../peers/redisServer';
import { DEFAULT_SANDBOX_API_KEY, startMailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { getFreePort } from '../../src/shared/freePort';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const QUEUE = 'order_mail_jobs';
/** How long before its job is queued the new side starts the orders it leads (every other one). */
const NEW_SIDE_LEAD_MS = 1_500;

export interface CutoverOptions {
  orders: number;
  oldWorkers: number;
  newWorkers: number;
  /** Jobs the shop's order service pushes per second. */
  enqueueRate: number;
  /** Adopt once this share of the orders has a row written by the old workers. */
  adoptAt: number;
  faults: FaultMix;
  seed: number;
  timeoutMs: number;
}

export const CUTOVER_DEFAULTS: CutoverOptions = {
  orders: 500,
  oldWorkers: 3,
  newWorkers: 3,
  enqueueRate: 10,
  adoptAt: 0.1,
  // The chaos profile's mix (accept-then-drop the most common, since it is the fault that sends), read from
  // it so that the two runs cannot drift apart.
  faults: { ...PROFILES.chaos.faults },
  seed: 1,
  timeoutMs: 900_000,
};

export interface CutoverReport {
  options: CutoverOptions;
  durationS: number;
  adoption: { rowsAtAdoption: { sent: number; failed: number; sending: number }; copied: number };
  oldWorkers: Record<string, number>;
  newWorkflows: Record<string, number>;
  sweep: { finalRuns: number; settledBySweep: number };
  operatorRetries: number;
  sandbox: { requests: number; faults: Record<string, number>; messages: number };
  rows: Record<string, number>;
  invariants: {
    ordersWithTwoOrMoreMessages: number;
    ordersWithoutRow: number;
    rowsSending: number;
    rowsFailed: number;
    sentRowsWithoutMessageNotAssumed: number;
    failedRowsWithMessage: number;
  };
  ok: boolean;
}

type Say = (line: string) => void;

export async function runCutover(options: CutoverOptions, say: Say): Promise<CutoverReport> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  const runId = `cutover-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDirectory = path.join(PROJECT_ROOT, '.tmp', 'cutover', runId);
  await mkdir(runDirectory, { recursive: true });
  const taskQueue = `order-mail-${runId.toLowerCase()}-${randomBytes(2).toString('hex')}`;
  const stops: (() => Promise<unknown>)[] = [];
  await releaseEmbeddedPostgresSignalHooks();
  try {
    const [postgres, temporal, redis, sandbox] = await Promise.all([
      startEmbeddedPostgres(),
      getFreePort('127.0.0.1').then((port) =>
        startTemporalDevServer({
          port,
          uiPort: null,
          namespace: 'default',
          searchAttributes: devServerSearchAttributes(),
        }),
      ),
      startRedisServer(),
      startMailSandbox({ faultPlan: { rates: faultRates(options.faults), seed: options.seed } }),
    ]);
    stops.push(
      () => postgres.stop(),
      () => temporal.stop(),
      () => redis.stop(),
      () => sandbox.close(),
    );
    say(`logs in ${path.relative(process.cwd(), runDirectory)}; sandbox ${sandbox.url}`);
    const db = createDatabase({ connectionString: postgres.connectionString, applicationName: 'cutover' });
    stops.push(() => db.close());
    const caseStudyUrl = await createShopTables(db, postgres.connectionString);
    const orderIds = await createOrders(db, options.orders);
    say(`the shop: ${orderIds.length} confirmed orders, the case study's order_mail_log, no rows yet`);

    // 1. The old system alone.
    const oldWorkers = startOldWorkers(options.oldWorkers, caseStudyUrl, redis, sandbox.url);
    stops.push(() => Promise.all(oldWorkers.map((worker) => worker.stop(15_000))));
    const feeder = feedQueue(redis, orderIds, options.enqueueRate);
    const adoptAfter = Math.ceil(options.orders * options.adoptAt);
    await waitUntil('the old workers to write the first rows', deadline, async () => {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM order_mail_log');
      return rows[0]!.n >= adoptAfter;
    });

    // 2. Adoption, with the old workers running.
    const adopted = await migrate(postgres.connectionString, { adopt: true });
    const rowsAtAdoption = adopted.adopted!.rows;
    const cutoverAt = new Date();
    say(`adopted order_mail_log with ${JSON.stringify(rowsAtAdoption)}; the old workers go on`);

    // 3. Our workers, and the new order service starting every order while the queue is still fed.
    const fleet: WorkerFleet = startWorkerFleet({
      size: options.newWorkers,
      env: newWorkerEnv(postgres.connectionString, temporal.address, taskQueue, sandbox.url, cutoverAt),
      logDirectory: runDirectory,
      random: Math.random,
    });
    stops.push(() => fleet.stop());
    await fleet.whenAllStarted();
    const connection = await Connection.connect({ address: temporal.address });
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: 'default' });
    const results = new Map<string, Promise<OrderMailResult | { failed: string }>>();
    const startMail = async (orderId: string): Promise<void> => {
      await startOrderConfirmationMail(client, orderId, { taskQueue });
      results.set(orderId, workflowResult(client, orderId));
    };
    const queued = feeder.alsoStart(startMail);
    say(
      `${options.newWorkers} new workers polling ${taskQueue}; starting the ${queued.length} orders queued so far`,
    );
    await forEachLimited(queued, 20, startMail);
    await feeder.done;
    say(
      `${results.size} workflows started, ${orderIds.length - queued.length} of them beside their job, every other one leading it`,
    );

    // 4. The old workers drain their queue and stop; every workflow closes; the sweep settles old claims.
    await waitUntil('the old queue to drain', deadline, () => queueDrained(redis, oldWorkers.length));
    const oldExit = await Promise.all(oldWorkers.map((worker) => worker.stop(15_000)));
    say(`old workers drained and stopped (exit codes ${oldExit.join(', ')})`);
    const newWorkflows: Record<string, number> = {};
    for (const result of await Promise.all(results.values())) {
      const key = 'failed' in result ? `failed: ${result.failed}` : `${result.result} (${result.outcome})`;
      newWorkflows[key] = (newWorkflows[key] ?? 0) + 1;
    }
    const sweeps = await startRunSweeps({ client, db, taskQueue, runId, orderIds, everyMs: 0 });
    await sweeps.finish(deadline, say);
    const sweepFacts = await sweeps.facts();

    // 5. What is left failed is retried by an operator, as docs/adoption.md says.
    const { rows: failed } = await db.query<{ orderId: string }>(
      `SELECT order_id::text AS "orderId" FROM order_mail_log WHERE state = 'failed' ORDER BY order_id`,
    );
    const ops = {
      db,
      client,
      namespace: 'default',
      taskQueue,
      uiBaseUrl: 'http://localhost:8233',
      operator: 'cutover run',
    };
    for (const { orderId } of failed) {
      await retryOrderMail(ops, { orderId, reason: 'cut-over: failed on the old side, send now' });
      await client.workflow
        .getHandle(orderId)
        .result()
        .catch(() => undefined);
    }
    if (failed.length > 0) say(`operator retried ${failed.length} failed orders`);
    await fleet.stop('SIGTERM');

    const report: CutoverReport = {
      options,
      durationS: Math.round((Date.now() - started) / 1000),
      adoption: {
        rowsAtAdoption,
        copied: rowsAtAdoption.sent + rowsAtAdoption.failed + rowsAtAdoption.sending,
      },
      oldWorkers: countOldWorkerEvents(oldWorkers),
      newWorkflows,
      sweep: { finalRuns: sweepFacts.finalRuns, settledBySweep: sweepFacts.settledBySweep },
      operatorRetries: failed.length,
      sandbox: sandboxFacts(sandbox, orderIds),
      rows: await rowClasses(db),
      invariants: await invariants(db, sandbox, orderIds),
      ok: false,
    };
    const inv = report.invariants;
    report.ok =
      inv.ordersWithTwoOrMoreMessages === 0 &&
      inv.ordersWithoutRow === 0 &&
      inv.rowsSending === 0 &&
      inv.rowsFailed === 0 &&
      inv.sentRowsWithoutMessageNotAssumed === 0 &&
      inv.failedRowsWithMessage === 0;
    return report;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/**
 * The shop's tables, and the case study's order_mail_log owned by the case study's own login (in none of this
 * service's groups, docs/adoption.md): its workers run as it. Returns that login's URL.
 */
async function createShopTables(db: Database, adminUrl: string): Promise<string> {
  for (const file of ['0001_orders.sql', '0002_order_items.sql']) {
    await db.query(await readFile(path.join(PROJECT_ROOT, 'src', 'db', 'migrations', file), 'utf8'));
  }
  await db.query(await readFile(path.join(PYTHON_PEERS_DIRECTORY, 'order_mail_log.sql'), 'utf8'));
  const password = randomBytes(18).toString('base64url');
  await db.query(`CREATE ROLE ${CASE_STUDY_LOGIN} LOGIN PASSWORD '${password}'`);
  await db.query(`ALTER TABLE order_mail_log OWNER TO ${CASE_STUDY_LOGIN}`);
  await db.query(`GRANT SELECT ON orders, order_items TO ${CASE_STUDY_LOGIN}`);
  const url = new URL(adminUrl);
  url.username = CASE_STUDY_LOGIN;
  url.password = password;
  return url.toString();
}

async function createOrders(db: Database, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index++) {
    ids.push(
      await insertOrder(db, {
        customerName: '山田 太郎',
        customerEmail: `customer${index + 1}@example.com`,
        items: [{ productName: '有機緑茶 100g', quantity: 1 + (index % 3), unitPriceYen: 1200 }],
      }),
    );
  }
  return ids;
}

/** The case study's login (the cluster is this run's own). */
const CASE_STUDY_LOGIN = 'case_study_app';

function startOldWorkers(count: number, databaseUrl: string, redis: RedisServer, mailUrl: string) {
  return Array.from({ length: count }, (_, index): PeerProcess => {
    const name = `case-study-worker-${index + 1}`;
    return spawnPythonPeer(name, 'case_study_worker.py', [], {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      MAIL_QUEUE: QUEUE,
      MAIL_API_BASE_URL: mailUrl,
      MAIL_API_KEY: DEFAULT_SANDBOX_API_KEY,
      MAIL_CONNECT_TIMEOUT_MS: '1000',
      MAIL_HEADERS_TIMEOUT_MS: '2000',
      WORKER_NAME: name,
    });
  });
}

/**
 * The shop's order service pushes one job per order, at `rate` per second, as orders commit. From alsoStart on,
 * it also starts each next order's workflow: for every other order first, its job queued NEW_SIDE_LEAD_MS
 * later, so that our run holds the claim when the old worker comes (and a 429 or 503 leaves our row failed
 * while the old worker's UPDATE … WHERE state='failed' arrives); for the others the job first, then the start.
 * alsoStart returns the orders queued before it.
 */
function feedQueue(redis: RedisServer, orderIds: string[], rate: number) {
  const hook: { start: ((orderId: string) => Promise<void>) | null } = { start: null };
  let queued = 0;
  const pending: Promise<unknown>[] = [];
  const push = (orderId: string) => redis.command('RPUSH', QUEUE, JSON.stringify({ order_id: orderId }));
  const done = (async () => {
    const began = Date.now();
    for (const [index, orderId] of orderIds.entries()) {
      const due = began + (index * 1000) / rate;
      if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      const start = hook.start;
      if (start === null) {
        await push(orderId);
        queued = index + 1;
      } else if (index % 2 === 0) {
        pending.push(
          start(orderId).then(async () => {
            await new Promise((resolve) => setTimeout(resolve, NEW_SIDE_LEAD_MS));
            await push(orderId);
          }),
        );
      } else {
        await push(orderId);
        pending.push(start(orderId));
      }
    }
    await Promise.all(pending);
  })();
  return {
    done,
    alsoStart(next: (orderId: string) => Promise<void>): string[] {
      hook.start = next;
      return orderIds.slice(0, queued);
    },
  };
}

/** The queue is empty and every old worker waits in BLPOP (none holds a job), by Redis's CLIENT LIST. */
async function queueDrained(redis: RedisServer, workers: number): Promise<boolean> {
  if ((await redis.command('LLEN', QUEUE)) !== 0) return false;
  const list = await redis.command('CLIENT', 'LIST');
  if (typeof list !== 'string') return false;
  const idle = list.split('\n').filter((line) => /\bcmd=blpop\b/.test(line) && /\bflags=\S*b/.test(line));
  return idle.length >= workers && (await redis.command('LLEN', QUEUE)) === 0;
}

function newWorkerEnv(
  databaseUrl: string,
  temporalAddress: string,
  taskQueue: string,
  mailUrl: string,
  cutoverAt: Date,
): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    MAIL_DEPLOYMENT_ID: 'default',
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: mailUrl,
    MAIL_API_KEY: DEFAULT_SANDBOX_API_KEY,
    UNKNOWN_OUTCOME_POLICY: 'assume-sent',
    MAIL_CONNECT_TIMEOUT_MS: '1000',
    MAIL_HEADERS_TIMEOUT_MS: '2000',
    MAIL_OVERALL_TIMEOUT_MS: '3000',
    SEND_ACTIVITY_TIMEOUT_MS: '8000',
    SEND_MAX_ATTEMPTS: '25',
    SEND_RETRY_INITIAL_MS: '200',
    SEND_RETRY_MAX_MS: '3000',
    WORKER_MAX_CONCURRENT_ACTIVITIES: '20',
    // docs/adoption.md: the sweep starts missed orders confirmed after the cut-over only.
    RECONCILE_CONFIRMED_SINCE: cutoverAt.toISOString(),
    RECONCILE_GRACE_MS: '10000',
  };
}

async function workflowResult(
  client: Client,
  orderId: string,
): Promise<OrderMailResult | { failed: string }> {
  try {
    return await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
  } catch (error) {
    const type =
      error instanceof WorkflowFailedError
        ? ((error.cause as { type?: string } | undefined)?.type ?? 'error')
        : 'error';
    return { failed: type };
  }
}

function countOldWorkerEvents(workers: PeerProcess[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const worker of workers) {
    for (const event of worker.events()) {
      const name = typeof event.event === 'string' ? event.event : 'unknown';
      if (name === 'started' || name === 'stopped') continue;
      // A failed job by the exception's class (MailApiServerError, a psycopg error, …): a database error here
      // would be an old statement the adopted table refused.
      const error = typeof event.error === 'string' ? /^(\w+)/.exec(event.error)?.[1] : undefined;
      const key = name === 'job-failed' && error !== undefined ? `${name}: ${error}` : name;
      counts[key] = (counts[key] ?? 0) + 1;
    }
  }
  return counts;
}

function sandboxFacts(sandbox: Awaited<ReturnType<typeof startMailSandbox>>, orderIds: string[]) {
  const ours = new Set(orderIds);
  const requests = sandbox
    .requests()
    .filter((request) => request.path === '/v1/messages' && ours.has(request.orderId ?? ''));
  const faults: Record<string, number> = {};
  for (const request of requests) {
    const fault = request.fault;
    const name =
      fault === null || fault === undefined
        ? 'none'
        : fault.kind === 'status'
          ? `${fault.status}${fault.record === true ? ' after processing' : ''}`
          : fault.kind;
    faults[name] = (faults[name] ?? 0) + 1;
  }
  return {
    requests: requests.length,
    faults,
    messages: sandbox.messages().filter((message) => ours.has(message.orderId ?? '')).length,
  };
}

async function rowClasses(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ key: string; n: number }>(
    `SELECT state || ' / ' || coalesce(outcome, '-') || coalesce(' / ' || unknown_policy, '') ||
            CASE WHEN claim_token LIKE 'legacy:%' THEN ' (old worker)' ELSE '' END AS key,
            count(*)::int AS n
       FROM order_mail_log GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((row) => [row.key, row.n]));
}

async function invariants(
  db: Database,
  sandbox: Awaited<ReturnType<typeof startMailSandbox>>,
  orderIds: string[],
): Promise<CutoverReport['invariants']> {
  const messages = new Map<string, number>();
  for (const message of sandbox.messages()) {
    if (message.orderId !== null) messages.set(message.orderId, (messages.get(message.orderId) ?? 0) + 1);
  }
  const { rows } = await db.query<{ orderId: string; state: string; outcome: string | null }>(
    `SELECT o.id::text AS "orderId", l.state, l.outcome
       FROM orders o LEFT JOIN order_mail_log l ON l.order_id = o.id WHERE o.id = ANY($1::bigint[])`,
    [orderIds],
  );
  const count = (test: (row: (typeof rows)[number], sent: number) => boolean) =>
    rows.filter((row) => test(row, messages.get(row.orderId) ?? 0)).length;
  return {
    ordersWithTwoOrMoreMessages: count((_, sent) => sent >= 2),
    ordersWithoutRow: count((row) => row.state === null),
    rowsSending: count((row) => row.state === 'sending'),
    rowsFailed: count((row) => row.state === 'failed'),
    // A sent row without a message is allowed only where an unknown outcome was assumed sent (either side).
    sentRowsWithoutMessageNotAssumed: count(
      (row, sent) => row.state === 'sent' && sent === 0 && !['unknown', 'legacy'].includes(row.outcome ?? ''),
    ),
    failedRowsWithMessage: count((row, sent) => row.state === 'failed' && sent > 0),
  };
}

async function waitUntil(what: string, deadline: number, check: () => Promise<boolean>): Promise<void> {
  for (let delay = 100; ; delay = Math.min(delay * 2, 1_000)) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

async function forEachLimited<T>(items: T[], lanes: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
