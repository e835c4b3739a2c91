// Composition root of a worker process: config → runtime (metrics) → HTTP port → pg pool → mail transport →
// (wait for Postgres: the schema is migrated) → (wait for Temporal: connections) → Worker pair. Run any number of these
// against one task queue; they share nothing but Postgres and Temporal.
//
// Dependencies: a worker started before Postgres or Temporal (or one that loses Temporal while running for
// good) does not exit: it retries with capped backoff, says what it waits for in its log and on /readyz,
// and serves as soon as they answer. Only a configuration error ends it, at once and with its own message.
//
// Stopping (SIGTERM, SIGINT): the activity worker stops first and lets its running sends finish; the
// workflow worker goes on processing workflow tasks until every send this process ran is recorded (the
// record is a local activity of the workflow's next task), bounded by WORKER_SHUTDOWN_GRACE_MS; then it stops.
// First: refuses an unsupported Node before any other import can fail on it.
import './nodeGuard';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig, type WorkerConfig } from './config/loadConfig';
import {
  isTransientPostgresError,
  isTransientTemporalError,
  retryUntilAvailable,
  type Dependency,
  type DependencyWaitReport,
} from './dependencyRetry';
import { postgresTarget, temporalTarget } from './config/connectionTargets';
import { countStuckSending } from './db/mailLogGauges';
import { createDatabase, type Database } from './db/pool';
import { assertSchemaReady } from './db/schemaReady';
import { getFreePort } from './shared/freePort';
import { PROVIDER_EVENT_SIGNAL } from './shared/workflowContract';
import { createProviderTransports, type ProviderTransports } from './mail/providerTransports';
import {
  createOrderMailMetrics,
  noOrderMailMetrics,
  ORDER_MAIL_METRICS,
  SEND_DURATION_BUCKETS,
  type OrderMailMetrics,
} from './metrics/orderMailMetrics';
import { startWorkerHttpServer, type WorkerLiveness } from './metrics/workerHttpServer';
import { assertSearchAttributesRegistered } from './temporal/searchAttributes';
import { resetHistoryReader } from './temporal/resetHistory';
import { UnrecordedSends } from './unrecordedSends';
import { startTracing, type Tracing } from './tracing/tracing';
import { startEarlyLookups } from './verification/earlyLookups';
import { defaultWorkerIdentity, orderMailWorkerPair } from './workerOptions';
import { jsonLogger, workerLogLine } from './workerLog';

/** What the process is doing, for /healthz, /readyz and the log. */
class WorkerStatus {
  state: WorkerLiveness = 'waiting';
  waitingFor: string | null = null;

  /** Each dependency as an operator finds it: address and setting (`Postgres at db:5432/shop (DATABASE_URL)`). */
  constructor(private readonly targets: Record<Dependency, string>) {}

  waiting(report: DependencyWaitReport, logIt: boolean): void {
    this.state = 'waiting';
    const target = this.targets[report.dependency];
    this.waitingFor = `${target}: ${report.reason}`;
    if (logIt) {
      log('info', `Waiting for ${target}`, {
        reason: report.reason,
        attempt: report.attempt,
        nextTryInMs: report.nextTryInMs,
      });
    }
  }

  set(state: WorkerLiveness): void {
    this.state = state;
    if (state !== 'waiting') this.waitingFor = null;
  }
}

export async function runWorker(config: WorkerConfig, stop: AbortSignal): Promise<void> {
  // Before any client or worker exists: they take their interceptors from it. Flushed last, after the workers
  // stopped, so the spans of the sends that finished while stopping are exported too.
  const tracing = config.tracing === null ? null : await startTracing(config.tracing);
  try {
    await runWorkerTraced(config, stop, tracing);
  } finally {
    await tracing?.shutdown().catch((error: unknown) => logError('Exporting the last spans failed', error));
  }
}

async function runWorkerTraced(
  config: WorkerConfig,
  stop: AbortSignal,
  tracing: Tracing | null,
): Promise<void> {
  const runtimeMetricsUrl = await installRuntime(config);
  const workerIdentity = defaultWorkerIdentity();
  // Which provider, never its key or base URL (a URL may carry more than it should).
  const mailProvider = config.smtp === null ? config.mailApi.provider : 'smtp';
  const status = new WorkerStatus({
    Postgres: postgresTarget(config.databaseUrl, 'DATABASE_URL'),
    Temporal: temporalTarget(
      config.temporal.connection.connectionOptions.address,
      config.temporal.connection.addressSetting,
    ),
  });
  // Set while the worker runs: /readyz asks Temporal through it.
  let temporalClient: Connection | null = null;

  // Nothing here connects yet: the pool and the transport connect on first use.
  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: `order-mail-worker ${workerIdentity}`,
    maxConnections: config.worker.pgPoolMax,
    statementTimeoutMs: config.worker.pgStatementTimeoutMs,
  });
  try {
    // One transport per provider of MAIL_PROVIDERS (one without failover), and each provider's lookup over a
    // pool of its own, so it never waits behind sends (src/verification/).
    const providers = createProviderTransports(config.providers, config.smtp, config.workflow);
    try {
      const metrics: OrderMailMetrics =
        runtimeMetricsUrl === null
          ? noOrderMailMetrics
          : createOrderMailMetrics(Runtime.instance().metricMeter, { provider: mailProvider });
      // Up before the dependencies, so an orchestrator sees "alive, not ready" (and why) while it waits.
      const http =
        config.worker.httpBindAddress === null || runtimeMetricsUrl === null
          ? null
          : await startWorkerHttpServer({
              bindAddress: config.worker.httpBindAddress,
              runtimeMetricsUrl,
              gaugeRefreshIntervalMs: config.worker.gaugeRefreshIntervalMs,
              refreshGauges: async () =>
                metrics.setStuckSendingRows(
                  await countStuckSending(db, { sendTimeoutMs: config.workflow.sendTimeoutMs }),
                ),
              workerState: () => status.state,
              waitingFor: () => status.waitingFor,
              checkDatabase: async () => void (await db.query('SELECT 1')),
              checkTemporal: async () => {
                if (temporalClient === null) throw new Error('not connected to Temporal');
                const connection = temporalClient;
                await connection.withDeadline(Date.now() + 700, () =>
                  connection.workflowService.getSystemInfo({}),
                );
              },
              log,
            });
      try {
        const waitOptions = { stop, onWaiting: status.waiting.bind(status) };
        // A worker runs no DDL: the migrations are their own step, with their own role (npm run db:migrate).
        // It refuses to start on a schema that is not migrated to its build, or a role that may not do its
        // work (SchemaNotReadyError, a configuration error). Its first use of Postgres: here it waits for it.
        const ready = await retryUntilAvailable(
          'Postgres',
          async () => {
            await assertSchemaReady(db);
            return true;
          },
          isTransientPostgresError,
          waitOptions,
        );
        if (ready === null) return;
        // One round per connection to Temporal: a worker that fails for want of Temporal connects again.
        while (!stop.aborted) {
          const outcome = await runOnce({
            config,
            db,
            providers,
            metrics,
            workerIdentity,
            mailProvider,
            status,
            stop,
            httpUrl: http?.url ?? null,
            tracing,
            connected: (connection) => (temporalClient = connection),
          });
          temporalClient = null;
          if (outcome === 'stopped') return;
          status.set('waiting');
        }
      } finally {
        await http?.close();
      }
    } finally {
      await providers.close();
    }
  } finally {
    await db.close();
  }
}

interface RoundSetup {
  config: WorkerConfig;
  db: Database;
  providers: ProviderTransports;
  metrics: OrderMailMetrics;
  workerIdentity: string;
  mailProvider: string;
  status: WorkerStatus;
  stop: AbortSignal;
  httpUrl: string | null;
  tracing: Tracing | null;
  connected: (client: Connection) => void;
}

/**
 * Connects to Temporal (waiting for it), runs the worker pair until asked to stop, and stops it in order.
 * 'lost': the workers failed for want of Temporal, and the caller starts a new round.
 */
async function runOnce(setup: RoundSetup): Promise<'stopped' | 'lost'> {
  const { config, status, stop } = setup;
  const waitOptions = { stop, onWaiting: status.waiting.bind(status) };
  const connection = await retryUntilAvailable(
    'Temporal',
    async () => {
      const connected = await NativeConnection.connect(config.temporal.connection.connectionOptions);
      try {
        // An upsert of an unregistered search attribute hangs the workflow instead of failing it: refuse to
        // start instead, and say what to run (SearchAttributesMissingError, a configuration error).
        await assertSearchAttributesRegistered(connected, config.temporal.namespace);
        return connected;
      } catch (error) {
        await connected.close().catch(() => undefined);
        throw error;
      }
    },
    isTransientTemporalError,
    waitOptions,
  );
  if (connection === null) return 'stopped';
  try {
    // The reconciliation sweep starts workflows and describes runs through a client of its own.
    const clientConnection = await retryUntilAvailable(
      'Temporal',
      () => Connection.connect(config.temporal.connection.connectionOptions),
      isTransientTemporalError,
      waitOptions,
    );
    if (clientConnection === null) return 'stopped';
    try {
      setup.connected(clientConnection);
      return await runWorkerPair(setup, connection, clientConnection);
    } finally {
      await clientConnection.close();
    }
  } finally {
    await connection.close();
  }
}

async function runWorkerPair(
  setup: RoundSetup,
  connection: NativeConnection,
  clientConnection: Connection,
): Promise<'stopped' | 'lost'> {
  const { config, status, stop, db } = setup;
  status.set('starting');
  const temporal = new Client({
    connection: clientConnection,
    namespace: config.temporal.namespace,
    ...(setup.tracing === null ? {} : { interceptors: setup.tracing.clientInterceptors }),
  });
  const unrecorded = new UnrecordedSends();
  const options = orderMailWorkerPair({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    dependencies: {
      db,
      mail: setup.providers.transports[0]!,
      mailProviders: setup.providers.transports,
      verifiers: setup.providers.verifiers,
      providerSettings: setup.providers.settings,
      providerMailIdentity: setup.providers.identities,
      providerHealth: config.providerHealth,
      mailIdentity: config.mail,
      mailLimits: config.mailLimits,
      settings: config.workflow,
      workerIdentity: setup.workerIdentity,
      deploymentId: config.deploymentId,
      metrics: setup.metrics,
      readResetOfRun: resetHistoryReader(temporal),
      ...(setup.providers.verifiers[0] === undefined ? {} : { verifier: setup.providers.verifiers[0] }),
    },
    reconcileDependencies: { db, temporal, settings: config.reconcile, metrics: setup.metrics },
    workflows:
      config.worker.workflowBundlePath === null
        ? { workflowsPath: require.resolve('./workflows') }
        : { workflowBundle: { codePath: config.worker.workflowBundlePath } },
    shutdownGraceTimeMs: config.worker.shutdownGraceTimeMs,
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    sendRateLimitPerSecond: config.worker.sendRateLimitPerSecond,
    unrecordedSends: unrecorded,
    tracing: setup.tracing,
  });
  let workflowWorker: Worker;
  let activityWorker: Worker;
  try {
    workflowWorker = await Worker.create(options.workflowWorker);
    activityWorker = await Worker.create(options.activityWorker);
  } catch (error) {
    // Temporal went away between connecting and registering the workers: another round.
    if (!isTransientTemporalError(error)) throw error;
    logError('Temporal went away while the workers were being created; connecting again', error);
    return 'lost';
  }

  const workflowsRunning = workflowWorker.run();
  const activitiesRunning = activityWorker.run();
  // A provider that posts webhook events: a stored event of a send in flight makes its run ask the lookup now
  // (src/verification/earlyLookups.ts). Best effort: without it the run asks at the end of its settle delay.
  const earlyLookups = !setup.providers.verifiers.some((verifier) => verifier.webhookProvider !== null)
    ? null
    : await startEarlyLookups({
        db,
        signal: (orderId) => temporal.workflow.getHandle(orderId).signal(PROVIDER_EVENT_SIGNAL),
        intervalMs: EARLY_LOOKUP_INTERVAL_MS,
        // A warning is an error line here: the worker's log has the two levels.
        log: (level, message, fields) => log(level === 'warn' ? 'error' : level, message, fields ?? {}),
      }).catch((error: unknown) => {
        logError('Early lookups on provider events are off for this round', error);
        return null;
      });
  status.set('running');
  log('info', 'Worker started', {
    identity: setup.workerIdentity,
    temporal: config.temporal.connection.description,
    taskQueue: config.temporal.taskQueue,
    unknownOutcomePolicy: config.workflow.unknownOutcomePolicy,
    mailProvider: setup.mailProvider,
    idempotencyWindowMs: config.workflow.idempotency?.windowMs ?? null,
    verifySettleDelayMs: config.workflow.verification?.settleDelayMs ?? null,
    http: setup.httpUrl,
  });

  // Either worker failing ends the round; a stop request ends it in order.
  const failed = Promise.race([workflowsRunning, activitiesRunning]).then(
    () => null,
    (error: unknown) => error,
  );
  const stopped = new Promise<'stop'>((resolve) => {
    if (stop.aborted) resolve('stop');
    stop.addEventListener('abort', () => resolve('stop'), { once: true });
  });
  const first = await Promise.race([failed, stopped]);
  await earlyLookups?.stop();

  // null: a worker ended without failing, which only a shutdown does; stop the other in order too.
  if (first === 'stop' || first === null) {
    status.set('stopping');
    const deadline = Date.now() + config.worker.shutdownGraceTimeMs;
    log('info', 'Stopping: running sends finish, then their outcomes are recorded', {
      identity: setup.workerIdentity,
      graceMs: config.worker.shutdownGraceTimeMs,
    });
    activityWorker.shutdown();
    await activitiesRunning.catch((error: unknown) =>
      logError('The activity worker failed while stopping', error),
    );
    // The workflow worker still polls: each finished send's next workflow task (its record) runs here.
    const left = await unrecorded.waitUntilRecorded(db, deadline);
    if (left > 0) {
      log('error', 'Stopping with sends not yet recorded: another worker records them', {
        unrecorded: left,
      });
    }
    workflowWorker.shutdown();
    await workflowsRunning.catch((error: unknown) =>
      logError('The workflow worker failed while stopping', error),
    );
    log('info', 'Worker stopped', { identity: setup.workerIdentity });
    return 'stopped';
  }

  // A worker failed. Stop the other, then decide: for want of Temporal, connect again; otherwise, exit.
  status.set('failed');
  for (const worker of [activityWorker, workflowWorker]) {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  }
  await Promise.allSettled([workflowsRunning, activitiesRunning]);
  if (isTransientTemporalError(first)) {
    logError('The worker lost Temporal; connecting again', first);
    return 'lost';
  }
  throw first instanceof Error ? first : new Error('the worker failed', { cause: first });
}

// The Temporal core's own warnings and errors (a failed poll, a lost connection) go through the same JSON
// logger: left to the core, they would be plain text on stderr, between the JSON lines.
const CORE_LOGS = { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } as const;

/**
 * Installs the Temporal runtime, with a Prometheus exporter when metrics are wanted, and returns its URL.
 * With only the worker's HTTP port configured, the exporter listens on a free loopback port, reached only
 * through the worker's /metrics. The runtime's own signal handling is off: it would stop both workers at
 * once, and this process stops them in order (runWorker). Must run before any connection exists: the
 * runtime is a process-wide singleton.
 */
async function installRuntime(config: WorkerConfig): Promise<string | null> {
  const { metricsBindAddress, httpBindAddress } = config.worker;
  if (metricsBindAddress === null && httpBindAddress === null) {
    Runtime.install({ shutdownSignals: [], logger: jsonLogger(), telemetryOptions: { logging: CORE_LOGS } });
    return null;
  }
  const bindAddress = metricsBindAddress ?? `127.0.0.1:${await getFreePort('127.0.0.1')}`;
  Runtime.install({
    shutdownSignals: [],
    logger: jsonLogger(),
    telemetryOptions: {
      logging: CORE_LOGS,
      metrics: {
        prometheus: {
          bindAddress,
          histogramBucketOverrides: { [ORDER_MAIL_METRICS.sendDuration]: SEND_DURATION_BUCKETS },
        },
      },
    },
  });
  const separator = bindAddress.lastIndexOf(':');
  const host = bindAddress.slice(0, separator);
  // A wildcard bind is reached over loopback; any other address as it is.
  const reachableHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
  return `http://${reachableHost}:${bindAddress.slice(separator + 1)}/metrics`;
}

// How often a worker reads newly stored provider events for early lookups (src/verification/earlyLookups.ts).
const EARLY_LOOKUP_INTERVAL_MS = 2_000;

function log(level: 'info' | 'error', message: string, fields: Record<string, unknown> = {}): void {
  console.log(workerLogLine(level, message, fields));
}

function logError(message: string, error: unknown): void {
  log('error', message, { error: error instanceof Error ? error.message : String(error) });
}

/** SIGTERM and SIGINT ask for an orderly stop; a second one is noted and otherwise changes nothing. */
function stopOnSignals(): AbortSignal {
  const controller = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (controller.signal.aborted) {
        log('info', `${signal} again: still stopping in order`);
        return;
      }
      log('info', `${signal}: stopping`);
      controller.abort();
    });
  }
  return controller.signal;
}

if (require.main === module) {
  Promise.resolve()
    .then(() => {
      // Configuration errors end the process at once: no waiting fixes them.
      const config = loadConfig(process.env);
      return runWorker(config, stopOnSignals());
    })
    .then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error instanceof Error ? error.message : String(error));
        process.exit(1);
      },
    );
}
