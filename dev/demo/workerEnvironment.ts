// What a run's worker processes are started with: the workflow code bundled once for all of them, and their
// environment, with deadlines short enough under faults that a run finishes.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { defaultDeploymentIdOf } from '../../src/config/loadConfig';
import type { RunOptions } from './runOptions';
import type { Stack } from './stack';
import { RUN_SEND_TIMEOUT_MS } from './runTimeouts';
import { RUN_SWEEP_GRACE_MS } from './sweep';
import { shapedUpgradeTimes, upgradeWorkerEnv } from './upgradeLoad';

export async function bundleWorkflows(
  runDirectory: string,
  build: { workflowsPath: string; name: string } = {
    workflowsPath: require.resolve('../../src/workflows'),
    name: 'workflow-bundle',
  },
): Promise<string> {
  // Imported lazily: the worker package loads the native runtime.
  const { bundleWorkflowCode, DefaultLogger } = await import('@temporalio/worker');
  const { code } = await bundleWorkflowCode({
    workflowsPath: build.workflowsPath,
    logger: new DefaultLogger('WARN'),
  });
  const codePath = path.join(runDirectory, `${build.name}.js`);
  await writeFile(codePath, code);
  return codePath;
}

/** The worker's environment (src/config/loadConfig.ts). Short deadlines under faults, so runs finish. */
export function workerEnvironment(
  options: RunOptions,
  stack: Stack,
  taskQueue: string,
  bundlePath: string,
): Record<string, string> {
  return {
    DATABASE_URL: stack.databaseUrl,
    TEMPORAL_ADDRESS: stack.temporal.address,
    TEMPORAL_NAMESPACE: stack.temporal.namespace,
    MAIL_DEPLOYMENT_ID: defaultDeploymentIdOf(stack.temporal.namespace),
    TEMPORAL_TASK_QUEUE: taskQueue,
    ...stack.mail.workerEnv,
    UNKNOWN_OUTCOME_POLICY: options.policy,
    // A hung request (or SMTP reply) becomes an unknown outcome after 2 s instead of 30 s.
    MAIL_CONNECT_TIMEOUT_MS: '1000',
    MAIL_HEADERS_TIMEOUT_MS: '2000',
    MAIL_OVERALL_TIMEOUT_MS: '3000',
    // Also how long Temporal takes to notice a send whose worker was killed.
    SEND_ACTIVITY_TIMEOUT_MS: String(RUN_SEND_TIMEOUT_MS),
    WORKER_SHUTDOWN_GRACE_MS: '8000',
    // Transient not-sent faults (429, 503, refused windows, a Postgres restart) must not exhaust the attempts.
    SEND_MAX_ATTEMPTS: '25',
    SEND_RETRY_INITIAL_MS: '200',
    SEND_RETRY_MAX_MS: '3000',
    PG_STATEMENT_TIMEOUT_MS: '5000',
    WORKER_MAX_CONCURRENT_ACTIVITIES: String(options.workerConcurrency),
    WORKFLOW_BUNDLE_PATH: bundlePath,
    // The sweep looks at rows quiet this long (and at orders confirmed this long ago without a row).
    RECONCILE_GRACE_MS: String(RUN_SWEEP_GRACE_MS),
    // The upgrade run's shaped load: slow answers inside longer deadlines, a backoff of a switch period.
    ...upgradeEnv(options),
  };
}

function upgradeEnv(options: RunOptions): Record<string, string> {
  const times = shapedUpgradeTimes(options);
  if (times === null) return {};
  // A send holds its HTTP connection slot through a slow answer: as many as the activity slots, or mid-send
  // stops at MAIL_CONNECTIONS per worker and the rest wait claimed.
  return { ...upgradeWorkerEnv(times), MAIL_CONNECTIONS: String(options.workerConcurrency) };
}
