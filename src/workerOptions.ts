import { existsSync } from 'node:fs';
import os from 'node:os';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection, WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDependencies } from './activities';
import { createSweepActivities, type SweepDependencies } from './activities/sweepActivities';
import { CONFIG_DEFAULTS } from './config/configDefaults';
import { withLookupTaskQueue } from './shared/workflowSettings';
import { DROPPED_WORKFLOW_SPANS, type Tracing } from './tracing/tracing';
import { untracedBundlePathOf, WORKFLOW_INTERCEPTOR_MODULES } from './tracing/workflowInterceptorModules';
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
  /** Lookups the lookup worker runs at once (WORKER_MAX_CONCURRENT_LOOKUPS); the default when absent. */
  maxConcurrentLookups?: number;
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

/**
 * The prebuilt bundle a worker runs (WORKFLOW_BUNDLE_PATH): with tracing off, the one without the interceptors
 * written beside it (src/cli/bundle-workflows.ts) when it is there. The interceptors issue no command, so a
 * workflow moves between the two (test/replay/replay.test.ts).
 */
export function prebuiltBundleToRun(
  bundlePath: string,
  tracingOn: boolean,
  exists: (path: string) => boolean = existsSync,
): { workflowBundle: { codePath: string } } {
  const untraced = untracedBundlePathOf(bundlePath);
  return { workflowBundle: { codePath: !tracingOn && exists(untraced) ? untraced : bundlePath } };
}

// The workflow worker's own grace on shutdown: only local activities (claim, record) can be running then.
const WORKFLOW_WORKER_GRACE_MS = 10_000;

/** The queue a process's lookup worker polls, beside the order-mail task queue (docs/design.md §6). */
export function lookupTaskQueueOf(taskQueue: string): string {
  return `${taskQueue}-lookups`;
}

/**
 * The process's workers: the activity worker stops first (docs/design.md §6, "Shutdown grace"), and lookups
 * have slots of their own on a queue apart, which slow sends cannot hold (§6, "Lookup slots").
 */
export function orderMailWorkerPair(setup: OrderMailWorkerSetup): {
  activityWorker: WorkerOptions;
  workflowWorker: WorkerOptions;
  lookupWorker: WorkerOptions;
} {
  const lookupTaskQueue = lookupTaskQueueOf(setup.taskQueue);
  // Every claim (and the sweep's find) hands the lookup queue to the run; verifyOrderMail stays registered on the
  // main queue too, for runs claimed by a build without it.
  const dependencies = withLookupsOn(setup.dependencies, lookupTaskQueue);
  const withLookups: OrderMailWorkerSetup = { ...setup, dependencies };
  const {
    workflowsPath: _path,
    workflowBundle: _bundle,
    ...activityWorker
  } = orderMailWorkerOptions(withLookups);
  const { maxTaskQueueActivitiesPerSecond: _rate, ...combined } = orderMailWorkerOptions(withLookups);
  const workflowWorker: WorkerOptions = {
    ...combined,
    // Regular activities are the activity worker's; this one runs claim and record locally only.
    enableNonLocalActivities: false,
    shutdownGraceTime: WORKFLOW_WORKER_GRACE_MS,
  };
  const {
    workflowsPath: _lookupPath,
    workflowBundle: _lookupBundle,
    // The send rate limit is the main queue's: it never delays a lookup.
    maxTaskQueueActivitiesPerSecond: _lookupRate,
    ...lookupBase
  } = orderMailWorkerOptions(withLookups);
  const lookupWorker: WorkerOptions = {
    ...lookupBase,
    taskQueue: lookupTaskQueue,
    activities: { verifyOrderMail: createActivities(dependencies).verifyOrderMail },
    maxConcurrentActivityTaskExecutions:
      setup.maxConcurrentLookups ?? CONFIG_DEFAULTS.WORKER_MAX_CONCURRENT_LOOKUPS,
  };
  return { activityWorker, workflowWorker, lookupWorker };
}

/** `deps` whose settings, the worker's and each provider's, schedule lookups on `taskQueue`. */
export function withLookupsOn(deps: ActivityDependencies, taskQueue: string): ActivityDependencies {
  const { providerSettings } = deps;
  return {
    ...deps,
    settings: withLookupTaskQueue(deps.settings, taskQueue),
    ...(providerSettings === undefined
      ? {}
      : {
          providerSettings: new Map(
            [...providerSettings].map(([name, settings]) => [name, withLookupTaskQueue(settings, taskQueue)]),
          ),
        }),
  };
}

export function defaultWorkerIdentity(): string {
  return `${process.pid}@${os.hostname()}`;
}
