// One round with Temporal: connect, run the worker pair, stop it in order (docs/design.md §6, "Shutdown grace").
import type { MailTemplates } from './mail/template/mailTemplates';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerConfig } from './config/loadConfig';
import { isTransientTemporalError, retryUntilAvailable } from './dependencyRetry';
import type { Database } from './db/pool';
import type { ProviderTransports } from './mail/providerTransports';
import type { OrderMailMetrics } from './metrics/orderMailMetrics';
import { PROVIDER_EVENT_SIGNAL } from './shared/workflowContract';
import { assertSearchAttributesRegistered } from './temporal/searchAttributeRegistration';
import { resetHistoryReader } from './temporal/resetHistory';
import type { Tracing } from './tracing/tracing';
import { UnrecordedSendTracker } from './unrecordedSendTracker';
import { startEarlyLookups } from './verification/earlyLookups';
import { createWitnessProber } from './verification/witnessProbe';
import { logWorker as log, logWorkerError as logError } from './workerLog';
import { orderMailWorkerPair, prebuiltBundleToRun } from './workerOptions';
import type { WorkerStatus } from './workerStatus';

// How often a worker reads newly stored provider events for early lookups (src/verification/earlyLookups.ts).
const EARLY_LOOKUP_INTERVAL_MS = 2_000;

export interface RoundSetup {
  config: WorkerConfig;
  db: Database;
  providers: ProviderTransports;
  mailTemplates: MailTemplates;
  metrics: OrderMailMetrics;
  workerIdentity: string;
  mailProvider: string;
  status: WorkerStatus;
  stop: AbortSignal;
  httpUrl: string | null;
  tracing: Tracing | null;
  connected: (client: Connection) => void;
}

/** 'lost': the workers failed for want of Temporal, and the caller starts a new round. */
export async function runOnce(setup: RoundSetup): Promise<'stopped' | 'lost'> {
  const { config, status, stop } = setup;
  const waitOptions = { stop, onWaiting: status.waiting.bind(status) };
  const connection = await retryUntilAvailable(
    'Temporal',
    async () => {
      const connected = await NativeConnection.connect(config.temporal.connection.connectionOptions);
      try {
        // An unregistered attribute would hang runs, not fail them: refuse to start instead.
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
  const unrecorded = new UnrecordedSendTracker();
  // Witness probes for quiet periods (MAIL_WITNESS_SINK_ADDRESS); none without a sink or without a lookup.
  const witnessProber =
    config.witnessProbe === null || setup.providers.verifiers.every((verifier) => verifier.lookup === null)
      ? null
      : createWitnessProber({
          db,
          settings: config.witnessProbe,
          transports: setup.providers.transports,
          identityOf: (provider) => setup.providers.identities.get(provider) ?? config.mail,
          deploymentId: config.deploymentId,
          workerIdentity: setup.workerIdentity,
          metrics: setup.metrics,
          log: (message, fields) => log('info', message, fields),
        });
  const options = orderMailWorkerPair({
    connection,
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    dependencies: {
      db,
      mail: setup.providers.transports[0]!,
      mailProviders: setup.providers.transports,
      drainingProviders: config.drainingProviders,
      verifiers: setup.providers.verifiers,
      providerSettings: setup.providers.settings,
      providerMailIdentity: setup.providers.identities,
      providerHealth: config.providerHealth,
      mailIdentity: config.mail,
      mailLimits: config.mailLimits,
      mailTemplates: setup.mailTemplates,
      settings: config.workflow,
      workerIdentity: setup.workerIdentity,
      deploymentId: config.deploymentId,
      metrics: setup.metrics,
      readResetOfRun: resetHistoryReader(temporal),
      ...(witnessProber === null ? {} : { witnessProber }),
      ...(setup.providers.verifiers[0] === undefined ? {} : { verifier: setup.providers.verifiers[0] }),
    },
    sweepDependencies: { db, temporal, settings: config.reconcile, metrics: setup.metrics },
    workflows:
      config.worker.workflowBundlePath === null
        ? { workflowsPath: require.resolve('./workflows') }
        : prebuiltBundleToRun(config.worker.workflowBundlePath, setup.tracing !== null),
    shutdownGraceTimeMs: config.worker.shutdownGraceTimeMs,
    maxConcurrentActivityTaskExecutions: config.worker.maxConcurrentActivityTaskExecutions,
    maxConcurrentLookups: config.worker.maxConcurrentLookups,
    sendRateLimitPerSecond: config.worker.sendRateLimitPerSecond,
    unrecordedSends: unrecorded,
    tracing: setup.tracing,
    deployment: config.worker.deployment,
  });
  let workflowWorker: Worker;
  let activityWorker: Worker;
  let lookupWorker: Worker;
  try {
    workflowWorker = await Worker.create(options.workflowWorker);
    activityWorker = await Worker.create(options.activityWorker);
    lookupWorker = await Worker.create(options.lookupWorker);
  } catch (error) {
    // Temporal went away between connecting and registering the workers: another round.
    if (!isTransientTemporalError(error)) throw error;
    logError('Temporal went away while the workers were being created; connecting again', error);
    return 'lost';
  }

  const workflowsRunning = workflowWorker.run();
  const activitiesRunning = activityWorker.run();
  const lookupsRunning = lookupWorker.run();
  // Early asks, best effort (docs/design.md §6, "Early asks").
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
    lookupTaskQueue: options.lookupWorker.taskQueue,
    deploymentVersion:
      config.worker.deployment === null
        ? 'unversioned'
        : `${config.worker.deployment.deploymentName}.${config.worker.deployment.buildId}`,
    unknownOutcomePolicy: config.workflow.unknownOutcomePolicy,
    mailProvider: setup.mailProvider,
    idempotencyWindowMs: config.workflow.idempotency?.windowMs ?? null,
    verifySettleDelayMs: config.workflow.verification?.settleDelayMs ?? null,
    http: setup.httpUrl,
  });

  // Any worker failing ends the round; a stop request ends it in order.
  const failed = Promise.race([workflowsRunning, activitiesRunning, lookupsRunning]).then(
    () => null,
    (error: unknown) => error,
  );
  const stopped = new Promise<'stop'>((resolve) => {
    if (stop.aborted) resolve('stop');
    stop.addEventListener('abort', () => resolve('stop'), { once: true });
  });
  const first = await Promise.race([failed, stopped]);
  await earlyLookups?.stop();

  // null: a worker ended without failing, which only a shutdown does; stop the others in order too.
  if (first === 'stop' || first === null) {
    status.set('stopping');
    const deadline = Date.now() + config.worker.shutdownGraceTimeMs;
    log('info', 'Stopping: running sends finish, then their outcomes are recorded', {
      identity: setup.workerIdentity,
      graceMs: config.worker.shutdownGraceTimeMs,
    });
    activityWorker.shutdown();
    // A lookup cut off at the grace is retried on another worker within its deadline.
    lookupWorker.shutdown();
    await Promise.all([
      activitiesRunning.catch((error: unknown) =>
        logError('The activity worker failed while stopping', error),
      ),
      lookupsRunning.catch((error: unknown) => logError('The lookup worker failed while stopping', error)),
    ]);
    // A probe under way finishes and records its answer (its transport's deadline bounds it).
    await witnessProber?.settled();
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

  // A worker failed. Stop the others, then decide: for want of Temporal, connect again; otherwise, exit.
  status.set('failed');
  for (const worker of [activityWorker, lookupWorker, workflowWorker]) {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  }
  await Promise.allSettled([workflowsRunning, activitiesRunning, lookupsRunning, witnessProber?.settled()]);
  if (isTransientTemporalError(first)) {
    logError('The worker lost Temporal; connecting again', first);
    return 'lost';
  }
  throw first instanceof Error ? first : new Error('the worker failed', { cause: first });
}
