// Composition root: config → runtime → HTTP port → pg pool → mail transport → (wait for Postgres) → (wait for
// Temporal) → worker pair. Waiting and stopping: docs/production.md, "Waiting for Postgres and Temporal", and
// docs/design.md §6, "Shutdown grace".
// First: refuses an unsupported Node before any other import can fail on it.
import './nodeGuard';
import type { Connection } from '@temporalio/client';
import { Runtime } from '@temporalio/worker';
import { loadConfig, type WorkerConfig } from './config/loadConfig';
import { isTransientPostgresError, retryUntilAvailable } from './dependencyRetry';
import { postgresTarget, temporalTarget } from './config/connectionTargets';
import { countOverdueSending } from './db/mailLogGauges';
import { readSendHoldGauges } from './db/sendHolds';
import { createDatabase } from './db/pool';
import { checkNoRowsBoundElsewhere, checkNoRowsBoundToAnotherDestination } from './db/boundProviders';
import { assertDeploymentIdOfNamespace } from './db/deploymentIds';
import { assertSchemaReady } from './db/schemaReady';
import { checkOrderContract } from './db/orderContract';
import { mailFieldsWith } from './mail/template/mailFields';
import { createProviderTransports } from './mail/providerTransports';
import { DEFAULT_TEMPLATE_DIR, loadMailTemplates, type MailTemplates } from './mail/template/mailTemplates';
import {
  createOrderMailMetrics,
  noOrderMailMetrics,
  type OrderMailMetrics,
} from './metrics/orderMailMetrics';
import { startWorkerHttpServer } from './metrics/workerHttpServer';
import { startTracing, type Tracing } from './tracing/tracing';
import { defaultWorkerIdentity } from './workerOptions';
import { logWorker as log, logWorkerError as logError } from './workerLog';
import { runOnce } from './workerPair';
import { installRuntime } from './workerRuntime';
import { WorkerStatus } from './workerStatus';

async function runWorker(config: WorkerConfig, templateDir: string, stop: AbortSignal): Promise<void> {
  // Before any client or worker (they take its interceptors); flushed last, after the sends that finished.
  const tracing = config.tracing === null ? null : await startTracing(config.tracing);
  try {
    await runWorkerTraced(config, templateDir, stop, tracing);
  } finally {
    await tracing?.shutdown().catch((error: unknown) => logError('Exporting the last spans failed', error));
  }
}

async function runWorkerTraced(
  config: WorkerConfig,
  templateDir: string,
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
    preparedStatements: config.worker.pgPreparedStatements,
  });
  try {
    // Each provider's lookup has a pool of its own, so it never waits behind sends.
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
              refreshGauges: async () => {
                metrics.setOverdueSendingRows(
                  await countOverdueSending(db, { sendTimeoutMs: config.workflow.sendTimeoutMs }),
                );
                metrics.setSendHolds(await readSendHoldGauges(db));
              },
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
        // No DDL here (npm run db:migrate); refuses a schema, role or deployment id unfit for its build.
        let mailTemplates: MailTemplates | null = null;
        const ready = await retryUntilAvailable(
          'Postgres',
          async () => {
            await assertSchemaReady(db);
            // Templates are checked against the order contract once: a change takes effect at the next start.
            const contract = await checkOrderContract(db);
            mailTemplates = loadMailTemplates(templateDir, mailFieldsWith(contract.extras));
            // Nor with open rows bound to a provider it lacks (ProvidersStillBoundError), unless forced.
            const configured = providers.transports.flatMap((transport) =>
              transport.destination === undefined ? [] : [transport.destination.provider],
            );
            const forced = await checkNoRowsBoundElsewhere(db, configured, config.forceStartReason);
            if (forced.length > 0) {
              log('error', 'Starting although open rows are bound to providers this worker does not have', {
                reason: config.forceStartReason,
                bound: forced,
              });
            }
            // Nor with open rows dispatched to another destination of a provider it has (a rotated key, …).
            const destinations = providers.transports.flatMap((transport) =>
              transport.destination === undefined ? [] : [transport.destination],
            );
            const elsewhere = await checkNoRowsBoundToAnotherDestination(
              db,
              destinations,
              config.forceStartReason,
            );
            if (elsewhere.length > 0) {
              log('error', 'Starting although open rows are bound to another destination of a provider', {
                reason: config.forceStartReason,
                bound: elsewhere,
              });
            }
            await assertDeploymentIdOfNamespace(db, {
              namespace: config.temporal.namespace,
              deploymentId: config.deploymentId,
            });
            return true;
          },
          isTransientPostgresError,
          waitOptions,
        );
        if (ready === null || mailTemplates === null) return;
        const templates: MailTemplates = mailTemplates;
        // One round per connection to Temporal: a worker that fails for want of Temporal connects again.
        while (!stop.aborted) {
          const outcome = await runOnce({
            config,
            db,
            providers,
            mailTemplates: templates,
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
      return runWorker(config, config.mailTemplateDir ?? DEFAULT_TEMPLATE_DIR, stopOnSignals());
    })
    .then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error instanceof Error ? error.message : String(error));
        process.exit(1);
      },
    );
}
