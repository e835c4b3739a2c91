// The Web UI's Reset, "to the first workflow task", through the API (there is no handle.reset() in the TS
// client). The new run replays nothing past that point, so it claims, sends and records afresh; the claim's
// rules (docs/design.md §4) make that safe: a sent order sends nothing, an orphaned claim is taken over or settled.
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { OpsRefusal } from './opsContext';

export interface ResetResult {
  workflowId: string;
  /** The run that was reset (terminated, if it was still running). */
  previousRunId: string;
  newRunId: string;
  /** The WorkflowTaskCompleted event the new run starts from. */
  eventId: number;
}

export async function resetToFirstWorkflowTask(
  client: Client,
  input: { workflowId: string; runId: string; reason: string; identity: string },
): Promise<ResetResult> {
  const history = await client.workflow.getHandle(input.workflowId, input.runId).fetchHistory();
  const firstCompleted = history.events?.find(
    (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  );
  if (!firstCompleted?.eventId) {
    throw new OpsRefusal(
      'NOT_RESETTABLE',
      `Workflow ${input.workflowId} (run ${input.runId}) has not completed its first workflow task, so there is ` +
        'nothing to reset to. Is a worker polling its task queue?',
    );
  }
  const eventId = Number(firstCompleted.eventId);
  const response = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId: input.workflowId, runId: input.runId },
    workflowTaskFinishEventId: firstCompleted.eventId,
    reason: input.reason,
    // Makes a repeated request (a network retry) one reset, not two.
    requestId: randomUUID(),
    identity: input.identity,
  });
  if (!response.runId)
    throw new Error(`Temporal did not say which run the reset of ${input.workflowId} started`);
  return { workflowId: input.workflowId, previousRunId: input.runId, newRunId: response.runId, eventId };
}
