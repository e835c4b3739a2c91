import os from 'node:os';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import { createReconcileActivities, type ReconcileDependencies } from './activities/reconcileActivities';
import { DROPPED_WORKFLOW_SPANS, type Tracing } from './tracing/tracing';
import { WORKFLOW_INTERCEPTOR_MODULES } from './tracing/workflowInterceptorModules';
import type { UnrecordedSendTracker } from './unrecordedSendTracker';

export interface OrderMailWorkerSetup {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  dependencies: ActivityDependencies;
  /** The reconciliation sweep's activities; a worker without them cannot run `reconcileOrderMails`. */
  reconcileDependencies?: ReconcileDependencies;
  /** Bundled workflow code (tests, production images) or a path to bundle at start-up (development). */
  workflows: { workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string };
  shutdownGraceTimeMs: number;
  maxConcurrentActivityTaskExecutions: number;
  /** The Mail API's rate limit, for every replica together; null for none. */
  sendRateLimitPerSecond?: number | null;
  /** Counts the sends run here until they are recorded, for a stopping worker to wait on. */
  unrecordedSends?: UnrecordedSendTracker;
  /** OpenTelemetry (src/tracing/tracing.ts), when the OTEL_* variables turned it on. */
  tracing?: Tracing | null;
  /**
   * The Worker Deployment Version this build polls as (TEMPORAL_WORKER_DEPLOYMENT_NAME and _BUILD_ID); null or
   * absent: an unversioned worker, upgraded by the patching rule. docs/production.md#upgrades.
   */
  deployment?: WorkerDeploymentVersion | null;
}

/** The worker's options as one Worker: workflows, local and regular activities. Tests run it so. */
export function orderMailWorkerOptions(setup: OrderMailWorkerSetup): WorkerOptions {
  const activities = createActivities(setup.dependencies);
  return {
    connection: setup.connection,
    namespace: setup.namespace,
    taskQueue: setup.taskQueue,
    identity: setup.dependencies.workerIdentity,
    activities: {
      ...(setup.unrecordedSends ? setup.unrecordedSends.track(activities) : activities),
      ...(setup.reconcileDependencies
        ? createReconcileActivities(setup.reconcileDependencies, setup.dependencies)
        : {}),
    },
    ...setup.workflows,
    // A bundle made at start-up carries the workflow interceptors only when tracing is on: off, they would
    // still open, end and drop every workflow's and activity's span inside the sandbox (and load the
    // OpenTelemetry SDK into each workflow), the largest share of the worker's CPU per order
    // (docs/benchmarks.md). A prebuilt bundle (WORKFLOW_BUNDLE_PATH) has them built in, whichever way.
    interceptors: {
      ...('workflowsPath' in setup.workflows && setup.tracing != null
        ? { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }
        : {}),
      ...setup.tracing?.workerInterceptors,
    },
    sinks: setup.tracing?.workflowSpanSinks ?? DROPPED_WORKFLOW_SPANS,
    // Every run stays on the build that started it (PINNED), so a new build never replays an old run's
    // history; the sweep's chain too, until the Schedule starts the next sweep on the current version.
    ...(setup.deployment == null
      ? {}
      : {
          workerDeploymentOptions: {
            version: setup.deployment,
            useWorkerVersioning: true,
            defaultVersioningBehavior: 'PINNED' as const,
          },
        }),
    // A rolling deploy must let a send in flight finish and be recorded, not turn it into an unknown.
    shutdownGraceTime: setup.shutdownGraceTimeMs,
    maxConcurrentActivityTaskExecutions: setup.maxConcurrentActivityTaskExecutions,
    // Enforced by the server for the whole task queue, so it holds at any number of replicas. It limits every
    // regular activity of the queue, and since claim and record run as local activities (which never pass
    // through the queue) the send is the only one: this is the send rate. docs/benchmarks.md.
    ...(setup.sendRateLimitPerSecond == null
      ? {}
      : { maxTaskQueueActivitiesPerSecond: setup.sendRateLimitPerSecond }),
  };
}

// The workflow worker's own grace on shutdown: only local activities (claim, record) can be running then.
const WORKFLOW_WORKER_GRACE_MS = 10_000;

/**
 * The same worker as two, as src/worker.ts runs it, so that it can stop in two steps: the activity worker
 * (regular activities: the send, the sweep's batches) stops first and lets its sends finish, while the
 * workflow worker (workflows and their local activities: claim and record) goes on until those sends are
 * recorded, and stops after.
 */
export function orderMailWorkerPair(setup: OrderMailWorkerSetup): {
  activityWorker: WorkerOptions;
  workflowWorker: WorkerOptions;
} {
  const { workflowsPath: _path, workflowBundle: _bundle, ...activityWorker } = orderMailWorkerOptions(setup);
  const { maxTaskQueueActivitiesPerSecond: _rate, ...combined } = orderMailWorkerOptions(setup);
  const workflowWorker: WorkerOptions = {
    ...combined,
    // Regular activities are the activity worker's; this one runs claim and record locally only.
    enableNonLocalActivities: false,
    shutdownGraceTime: WORKFLOW_WORKER_GRACE_MS,
  };
  return { activityWorker, workflowWorker };
}

export function defaultWorkerIdentity(): string {
  return `${process.pid}@${os.hostname()}`;
}
