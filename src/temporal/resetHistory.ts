// Reads a reset from Temporal's history, in an activity; where Temporal records it, and what it leaves out:
// docs/design.md §6, "What a reset leaves in history".
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/** The CLI records its own reset as a 'retry' act, so the claim writes no 'reset' act for it. */
export const OPS_RETRY_RESET_REASON_PREFIX = 'npm run ops -- retry, by ';

export interface ResetOfRun {
  baseRunId: string;
  newRunId: string;
  reason: string;
  identity: string;
  eventId: string;
  resetAt: string;
  baseRunTerminated: { reason: string; identity: string } | null;
}

/** Reads a run's reset, if a reset started it. */
export type ReadResetOfRun = (workflowId: string, runId: string) => Promise<ResetOfRun | null>;

// Keeps a slow Temporal from holding the claim activity that asks.
const HISTORY_READ_TIMEOUT_MS = 10_000;

const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;

export function resetHistoryReader(client: Client): ReadResetOfRun {
  const historyOf = (workflowId: string, runId: string) =>
    client.connection.withDeadline(Date.now() + HISTORY_READ_TIMEOUT_MS, () =>
      client.workflow.getHandle(workflowId, runId).fetchHistory(),
    );
  return async (workflowId, runId) => {
    const events = (await historyOf(workflowId, runId)).events ?? [];
    const reset = events.find(
      (event) =>
        event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED &&
        event.workflowTaskFailedEventAttributes?.cause ===
          WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW &&
        event.workflowTaskFailedEventAttributes.newRunId === runId,
    );
    const attributes = reset?.workflowTaskFailedEventAttributes;
    if (!reset || !attributes?.baseRunId) return null;
    const baseEvents = (await historyOf(workflowId, attributes.baseRunId)).events ?? [];
    const terminated = baseEvents.find(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    )?.workflowExecutionTerminatedEventAttributes;
    const seconds = Number(reset.eventTime?.seconds ?? 0);
    return {
      baseRunId: attributes.baseRunId,
      newRunId: runId,
      reason: attributes.failure?.message ?? '',
      identity: attributes.identity ?? '',
      eventId: String(reset.eventId ?? ''),
      resetAt: new Date(seconds * 1000 + Math.floor((reset.eventTime?.nanos ?? 0) / 1e6)).toISOString(),
      baseRunTerminated:
        terminated === null || terminated === undefined
          ? null
          : { reason: terminated.reason ?? '', identity: terminated.identity ?? '' },
    };
  };
}
