// Composition root of a worker process: config → pg pool → Mail API pool → Temporal connection → Worker.
// Run any number of these against one task queue; they share nothing but Postgres and Temporal.
import { NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadConfig, type WorkerConfig } from './config/loadConfig';
import { migrate } from './db/migrate';
import { createDatabase } from './db/pool';
import { createGenericMailApiClient } from './mail/genericMailApiClient';
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
    const mail = createGenericMailApiClient(config.mailApi);
    try {
      const connection = await NativeConnection.connect({ address: config.temporal.address });
      try {
        const worker = await Worker.create(
          orderMailWorkerOptions({
            connection,
            namespace: config.temporal.namespace,
            taskQueue: config.temporal.taskQueue,
            dependencies: { db, mail, mailIdentity: config.mail, settings: config.workflow, workerIdentity },
            workflows: { workflowsPath: require.resolve('./workflows') },
            shutdownGraceTimeMs: config.worker.shutdownGraceTimeMs,
            maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
            sendRateLimitPerSecond: config.worker.sendRateLimitPerSecond,
          }),
        );
        log('info', 'Worker started', {
          identity: workerIdentity,
          taskQueue: config.temporal.taskQueue,
          namespace: config.temporal.namespace,
          unknownOutcomePolicy: config.workflow.unknownOutcomePolicy,
        });
        // Resolves after SIGINT/SIGTERM (the runtime's shutdown signals) once running tasks have drained.
        await worker.run();
        log('info', 'Worker stopped', { identity: workerIdentity });
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
