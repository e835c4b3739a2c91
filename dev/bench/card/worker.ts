// The card's worker process: the product's config (loadConfig), runtime and JSON logger, pg pool settings, HTTP
// transport and its pool, worker options; one Worker with the card's workflow and activities on a task queue
// of its own. Nothing the product's worker adds: no verification, early lookups, metrics, sweep or second worker.
import { NativeConnection, Worker } from '@temporalio/worker';
import { loadConfig } from '../../../src/config/loadConfig';
import { createDatabase } from '../../../src/db/pool';
import { createProviderTransports } from '../../../src/mail/providerTransports';
import { defaultMailTemplates } from '../../../src/mail/template/mailTemplates';
import { defaultWorkerIdentity } from '../../../src/workerOptions';
import { logWorker as log } from '../../../src/workerLog';
import { installRuntime } from '../../../src/workerRuntime';
import { createCardActivities } from './activities';

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  await installRuntime(config);
  const identity = defaultWorkerIdentity();
  const db = createDatabase({
    connectionString: config.databaseUrl,
    applicationName: `order-mail-bench card ${identity}`,
    maxConnections: config.worker.pgPoolMax,
    statementTimeoutMs: config.worker.pgStatementTimeoutMs,
    preparedStatements: config.worker.pgPreparedStatements,
  });
  const providers = createProviderTransports(config.providers, config.smtp, config.workflow);
  const connection = await NativeConnection.connect(config.temporal.connection.connectionOptions);
  try {
    const worker = await Worker.create({
      connection,
      namespace: config.temporal.namespace,
      taskQueue: config.temporal.taskQueue,
      identity,
      workflowsPath: require.resolve('./workflows'),
      activities: createCardActivities({
        db,
        mail: providers.transports[0]!,
        mailIdentity: config.mail,
        mailTemplates: defaultMailTemplates(),
        sendTimeoutMs: config.workflow.sendTimeoutMs,
      }),
      shutdownGraceTime: config.worker.shutdownGraceTimeMs,
      maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    });
    log('info', 'Worker started', { component: 'card-worker', taskQueue: config.temporal.taskQueue });
    await worker.run();
  } finally {
    await connection.close();
    await providers.close();
    await db.close();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
