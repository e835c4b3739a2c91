import os from 'node:os';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import { createSweepActivities, type SweepDependencies } from './activities/sweepActivities';
import { DROPPED_WORKFLOW_SPANS, type Tracing } from './tracing/tracing';
import { WORKFLOW_INTERCEPTOR_MODULES } from './tracing/workflowInterceptorModules';
import type { UnrecordedSendTracker } from './unrecordedSendTracker';

export interface OrderMailWorkerSetup {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  dependencies: ActivityDependencies;
  sweepDependencies?: SweepDependencies;
  workflows: { workflowBundle: { codePath: string } | { code: string } } | { workflowsPath: string };
  shutdownGraceTimeMs: number;
  maxConcurrentActivityTaskExecutions: number;
  sendRateLimitPerSecond?: number | null;
  unrecordedSends?: UnrecordedSendTracker;
  tracing?: Tracing | null;
  /** Null: unversioned, upgraded by the patching rule (docs/production.md#upgrades). */
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
      ...(setup.sweepDependencies ? createSweepActivities(setup.sweepDependencies, setup.dependencies) : {}),
    },
    ...setup.workflows,
    // With tracing off the interceptors would be the largest share of CPU per order (docs/benchmarks.md).
    interceptors: {
      ...('workflowsPath' in setup.workflows && setup.tracing != null
        ? { workflowModules: WORKFLOW_INTERCEPTOR_MODULES }
        : {}),
      ...setup.tracing?.workerInterceptors,
    },
    sinks: setup.tracing?.workflowSpanSinks ?? DROPPED_WORKFLOW_SPANS,
    // PINNED: a new build never replays an old run (docs/production.md, "Worker Versioning").
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
    // The send rate for the whole queue (docs/design.md §6, "Rate limit").
    ...(setup.sendRateLimitPerSecond == null
      ? {}
      : { maxTaskQueueActivitiesPerSecond: setup.sendRateLimitPerSecond }),
  };
}

// The workflow worker's own grace on shutdown: only local activities (claim, record) can be running then.
const WORKFLOW_WORKER_GRACE_MS = 10_000;

/** Two workers, so the activity worker can stop first (docs/design.md §6, "Shutdown grace"). */
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
