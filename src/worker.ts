// Composition root of a worker process: config → runtime (metrics) → pg pool → mail transport → HTTP port →
// Temporal connection → Worker. Run any number of these against one task queue; they share nothing but
// Postgres and Temporal.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig, type WorkerConfig } from './config/loadConfig';
import { migrate } from './db/migrate';
import { countStuckSending } from './db/mailLogGauges';
import { createDatabase } from './db/pool';
import { getFreePort } from './shared/freePort';
import { createMailTransport } from './mail/createMailTransport';
import {
  createOrderMailMetrics,
  noOrderMailMetrics,
  ORDER_MAIL_METRICS,
  SEND_DURATION_BUCKETS,
  type OrderMailMetrics,
} from './metrics/orderMailMetrics';
import { startWorkerHttpServer, type WorkerLiveness } from './metrics/workerHttpServer';
import { assertSearchAttributesRegistered } from './temporal/searchAttributes';
import { defaultWorkerIdentity, orderMailWorkerOptions } from './workerOptions';

export async function runWorker(config: WorkerConfig): Promise<void> {
  const runtimeMetricsUrl = await installRuntime(config);
  const workerIdentity = defaultWorkerIdentity();
  // Migrations are safe to run from every worker at once (advisory lock), and make a new deployment self-contained.
  await migrate(config.databaseUrl);
  // Which provider, never its key or base URL (a URL may carry more than it should).
  const mailProvider = config.smtp === null ? config.mailApi.provider : 'smtp';

  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: `order-mail-worker ${workerIdentity}`,
    maxConnections: config.worker.pgPoolMax,
    statementTimeoutMs: config.worker.pgStatementTimeoutMs,
  });
  try {
    const mail = createMailTransport(config.mailApi, config.smtp);
    try {
      const metrics: OrderMailMetrics =
        runtimeMetricsUrl === null
          ? noOrderMailMetrics
          : createOrderMailMetrics(Runtime.instance().metricMeter, { provider: mailProvider });
      let worker: Worker | null = null;
      let failed = false;
      const http =
        config.worker.httpBindAddress === null || runtimeMetricsUrl === null
          ? null
          : await startWorkerHttpServer({
              bindAddress: config.worker.httpBindAddress,
              runtimeMetricsUrl,
              refreshGauges: async () =>
                metrics.setStuckSendingRows(
                  await countStuckSending(db, { sendTimeoutMs: config.workflow.sendTimeoutMs }),
                ),
              workerState: () => liveness(worker, failed),
              checkDatabase: async () => void (await db.query('SELECT 1')),
              log,
            });
      try {
        const connection = await NativeConnection.connect(config.temporal.connection.connectionOptions);
        try {
          // An upsert of an unregistered search attribute hangs the workflow instead of failing it: refuse to
          // start instead, and say what to run (SearchAttributesMissingError).
          await assertSearchAttributesRegistered(connection, config.temporal.namespace);
          // The reconciliation sweep starts workflows and describes runs through a client of its own.
          const clientConnection = await Connection.connect(config.temporal.connection.connectionOptions);
          try {
            const temporal = new Client({
              connection: clientConnection,
              namespace: config.temporal.namespace,
            });
            worker = await Worker.create(
              orderMailWorkerOptions({
                connection,
                namespace: config.temporal.namespace,
                taskQueue: config.temporal.taskQueue,
                dependencies: {
                  db,
                  mail,
                  mailIdentity: config.mail,
                  mailLimits: config.mailLimits,
                  settings: config.workflow,
                  workerIdentity,
                  metrics,
                },
                reconcileDependencies: { db, temporal, settings: config.reconcile },
                workflows:
                  config.worker.workflowBundlePath === null
                    ? { workflowsPath: require.resolve('./workflows') }
                    : { workflowBundle: { codePath: config.worker.workflowBundlePath } },
                shutdownGraceTimeMs: config.worker.shutdownGraceTimeMs,
                maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
                sendRateLimitPerSecond: config.worker.sendRateLimitPerSecond,
              }),
            );
            log('info', 'Worker started', {
              identity: workerIdentity,
              temporal: config.temporal.connection.description,
              taskQueue: config.temporal.taskQueue,
              unknownOutcomePolicy: config.workflow.unknownOutcomePolicy,
              mailProvider,
              idempotencyWindowMs: config.workflow.idempotency?.windowMs ?? null,
              http: http?.url ?? null,
            });
            // Resolves after SIGINT/SIGTERM (the runtime's shutdown signals) once running tasks have drained.
            await worker.run().catch((error: unknown) => {
              failed = true;
              throw error;
            });
            log('info', 'Worker stopped', { identity: workerIdentity });
          } finally {
            await clientConnection.close();
          }
        } finally {
          await connection.close();
        }
      } finally {
        await http?.close();
      }
    } finally {
      await mail.close();
    }
  } finally {
    await db.close();
  }
}

/**
 * Installs the Temporal runtime with a Prometheus exporter when metrics are wanted, and returns its URL.
 * With only the worker's HTTP port configured, the exporter listens on a free loopback port, reached only
 * through the worker's /metrics. Must run before any connection exists: the runtime is a process-wide singleton.
 */
async function installRuntime(config: WorkerConfig): Promise<string | null> {
  const { metricsBindAddress, httpBindAddress } = config.worker;
  if (metricsBindAddress === null && httpBindAddress === null) return null;
  const bindAddress = metricsBindAddress ?? `127.0.0.1:${await getFreePort('127.0.0.1')}`;
  Runtime.install({
    telemetryOptions: {
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

function liveness(worker: Worker | null, failed: boolean): WorkerLiveness {
  if (failed) return 'failed';
  if (worker === null) return 'starting';
  const state = worker.getState();
  if (state === 'FAILED') return 'failed';
  if (state === 'RUNNING') return 'running';
  return state === 'INITIALIZED' ? 'starting' : 'stopping';
}

function log(level: 'info' | 'error', message: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ level, component: 'worker', message, ...fields }));
}

if (require.main === module) {
  Promise.resolve()
    .then(() => runWorker(loadConfig(process.env)))
    .catch((error: unknown) => {
      console.error(error instanceof Error ? error.message : String(error));
      process.exit(1);
    });
}
