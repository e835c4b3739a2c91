// Composition root of a worker process: config → pg pool → Mail API pool → Temporal connection → Worker.
// Run any number of these against one task queue; they share nothing but Postgres and Temporal.
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig, type WorkerConfig } from './config/loadConfig';
import { migrate } from './db/migrate';
import { createDatabase } from './db/pool';
import { createMailTransport } from './mail/createMailTransport';
import { assertSearchAttributesRegistered } from './temporal/searchAttributes';
import { defaultWorkerIdentity, orderMailWorkerOptions } from './workerOptions';

export async function runWorker(config: WorkerConfig): Promise<void> {
  if (config.worker.metricsBindAddress !== null) {
    // Must happen before any connection exists: the runtime is a process-wide singleton.
    Runtime.install({
      telemetryOptions: { metrics: { prometheus: { bindAddress: config.worker.metricsBindAddress } } },
    });
  }
  const workerIdentity = defaultWorkerIdentity();
  // Migrations are safe to run from every worker at once (advisory lock), and make a new deployment self-contained.
  await migrate(config.databaseUrl);

  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: `order-mail-worker ${workerIdentity}`,
    maxConnections: config.worker.pgPoolMax,
    statementTimeoutMs: config.worker.pgStatementTimeoutMs,
  });
  try {
    const mail = createMailTransport(config.mailApi, config.smtp);
    try {
      const connection = await NativeConnection.connect({ address: config.temporal.address });
      try {
        // An upsert of an unregistered search attribute hangs the workflow instead of failing it: refuse to
        // start instead, and say what to run (SearchAttributesMissingError).
        await assertSearchAttributesRegistered(connection, config.temporal.namespace);
        // The reconciliation sweep starts workflows and describes runs through a client of its own.
        const clientConnection = await Connection.connect({ address: config.temporal.address });
        try {
          const temporal = new Client({ connection: clientConnection, namespace: config.temporal.namespace });
          const worker = await Worker.create(
            orderMailWorkerOptions({
              connection,
              namespace: config.temporal.namespace,
              taskQueue: config.temporal.taskQueue,
              dependencies: {
                db,
                mail,
                mailIdentity: config.mail,
                settings: config.workflow,
                workerIdentity,
              },
              reconcileDependencies: { db, temporal, settings: config.reconcile },
              workflows: { workflowsPath: require.resolve('./workflows') },
              shutdownGraceTimeMs: config.worker.shutdownGraceTimeMs,
              maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
            }),
          );
          log('info', 'Worker started', {
            identity: workerIdentity,
            taskQueue: config.temporal.taskQueue,
            namespace: config.temporal.namespace,
            unknownOutcomePolicy: config.workflow.unknownOutcomePolicy,
            // Which provider, never its key or base URL (a URL may carry more than it should).
            mailProvider: config.smtp === null ? config.mailApi.provider : 'smtp',
            idempotencyWindowMs: config.workflow.idempotency?.windowMs ?? null,
          });
          // Resolves after SIGINT/SIGTERM (the runtime's shutdown signals) once running tasks have drained.
          await worker.run();
          log('info', 'Worker stopped', { identity: workerIdentity });
        } finally {
          await clientConnection.close();
        }
      } finally {
        await connection.close();
      }
    } finally {
      await mail.close();
    }
  } finally {
    await db.close();
  }
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
