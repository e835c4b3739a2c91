import os from 'node:os';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import { createReconcileActivities, type ReconcileDependencies } from './activities/reconcileActivities';

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
}

/** The worker's options, shared by src/worker.ts and the tests, so tests run the worker as deployed. */
export function orderMailWorkerOptions(setup: OrderMailWorkerSetup): WorkerOptions {
  return {
    connection: setup.connection,
    namespace: setup.namespace,
    taskQueue: setup.taskQueue,
    identity: setup.dependencies.workerIdentity,
    activities: {
      ...createActivities(setup.dependencies),
      ...(setup.reconcileDependencies ? createReconcileActivities(setup.reconcileDependencies) : {}),
    },
    ...setup.workflows,
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

export function defaultWorkerIdentity(): string {
  return `${process.pid}@${os.hostname()}`;
}
