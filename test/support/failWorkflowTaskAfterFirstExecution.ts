// A workflow interceptor for tests, bundled with the workflows: fails the workflow TASK (not the workflow)
// right after the first execution of the local activity named in the run's memo
// (`failWorkflowTaskAfterFirst`), before its marker is recorded. The server then retries the workflow
// task, the worker replays the run from the start and the local activity runs a second time: exactly
// what Temporal may do to any local activity.
import { workflowInfo, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [
    {
      async scheduleLocalActivity(input, next) {
        const result = await next(input);
        const failAfter = workflowInfo().memo?.failWorkflowTaskAfterFirst;
        if (input.activityType === failAfter && isFirstExecution(result)) {
          // Not an ApplicationFailure: a plain Error fails the workflow task, which the server retries.
          throw new Error(`test: the workflow task fails after the first ${input.activityType}`);
        }
        return result;
      },
    },
  ],
});

/** The second execution finds its own claim ('own-claim') or its own settled row (alreadyRecorded). */
function isFirstExecution(result: unknown): boolean {
  const shape = result as { how?: string; alreadyRecorded?: boolean };
  return shape.how === 'first-claim' || shape.alreadyRecorded === false;
}
