// What Temporal's history says about a reset that started a run (read through the client, from an activity:
// the workflow itself stays deterministic). Temporal 1.29 records a reset in two places:
//   - the NEW run: a WorkflowTaskFailed event with cause RESET_WORKFLOW, whose failure message is the reason
//     the operator gave, with baseRunId and newRunId, and the identity "history-service";
//   - the BASE run, if it was still running: WorkflowExecutionTerminated with the same reason and the identity
//     "history-resetter".
// The identity the requester sent (the Web UI's, the CLI's) is recorded in neither, so an act made from this
// names the reason and Temporal's identities, not the person; docs/operating.md says so.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

/**
 * How `npm run ops -- retry` begins the reason of the reset it makes. The CLI records that reset as its own
 * 'retry' act, so the new run's claim writes no 'reset' act for it (src/activities/resetAct.ts).
 */
export const OPS_RETRY_RESET_REASON_PREFIX = 'npm run ops -- retry, by ';

export interface ResetOfRun {
  baseRunId: string;
  newRunId: string;
  /** The reason the operator typed, as the new run's reset event records it. */
  reason: string;
  /** The identity on the new run's reset event. */
  identity: string;
  /** The reset event's id in the new run's history, and its time. */
  eventId: string;
  resetAt: string;
  /** How the base run was ended by the reset, if it was still running then. */
  baseRunTerminated: { reason: string; identity: string } | null;
}

/** Reads a run's reset, if a reset started it. */
export type ReadResetOfRun = (workflowId: string, runId: string) => Promise<ResetOfRun | null>;

// A history read is small (a reset event sits right after the events copied from the base run); its deadline
// keeps a slow Temporal from holding the claim activity that asks.
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
