// A worker process for the floor workflows: the same SDK, the same start-up (bundling the workflows at
// start, as src/worker.ts does) and the same worker options as the product's worker, with no-op activities.
//   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, WORKER_MAX_CONCURRENT_ACTIVITIES
//   BENCH_MAX_CACHED_WORKFLOWS, BENCH_WORKFLOW_TASK_POLLERS, BENCH_ACTIVITY_TASK_POLLERS (optional tuning)
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { defaultWorkerIdentity } from '../../../src/workerOptions';
import { createFloorActivities } from './activities';

export function floorTuning(env: NodeJS.ProcessEnv): Partial<WorkerOptions> {
  const number = (name: string): number | undefined =>
    env[name] === undefined || env[name] === '' ? undefined : Number(env[name]);
  const tuning: Partial<WorkerOptions> = {};
  const cached = number('BENCH_MAX_CACHED_WORKFLOWS');
  if (cached !== undefined) tuning.maxCachedWorkflows = cached;
  const workflowPollers = number('BENCH_WORKFLOW_TASK_POLLERS');
  if (workflowPollers !== undefined) {
    tuning.workflowTaskPollerBehavior = { type: 'simple-maximum', maximum: workflowPollers };
  }
  const activityPollers = number('BENCH_ACTIVITY_TASK_POLLERS');
  if (activityPollers !== undefined) {
    tuning.activityTaskPollerBehavior = { type: 'simple-maximum', maximum: activityPollers };
  }
  return tuning;
}

async function main(): Promise<void> {
  const env = process.env;
  const taskQueue = env.TEMPORAL_TASK_QUEUE ?? 'order-mail-bench-floor';
  const connection = await NativeConnection.connect({ address: env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  try {
    const worker = await Worker.create({
      connection,
      namespace: env.TEMPORAL_NAMESPACE ?? 'default',
      taskQueue,
      identity: defaultWorkerIdentity(),
      workflowsPath: require.resolve('./workflows'),
      activities: createFloorActivities(),
      shutdownGraceTime: 1_000,
      maxConcurrentActivityTaskExecutions: Number(env.WORKER_MAX_CONCURRENT_ACTIVITIES ?? 100),
      ...floorTuning(env),
    });
    console.log(
      JSON.stringify({ level: 'info', component: 'floor-worker', message: 'Worker started', taskQueue }),
    );
    await worker.run();
  } finally {
    await connection.close();
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
