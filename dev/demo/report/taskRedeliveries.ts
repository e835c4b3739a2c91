// The workflow and activity tasks the server handed out again, as the workflows' histories record them (the
// cluster chaos report's count): a history host killed mid-task, a matching host that held a task in memory,
// a worker killed with tasks in hand all end in a task timing out and being dispatched again.
//   - a workflow task that timed out: start-to-close (a worker took it and never answered) or schedule-to-start
//     (nobody took it from a sticky queue in time; the server put it on the normal queue);
//   - a workflow task that failed, by cause;
//   - an activity task retried: each started event records its attempt, and the failure that ended the
//     attempt before it; a timeout there means the previous attempt was redelivered, not refused;
//   - an activity that timed out for good.
// Histories survive the hosts; the server's own metrics start from zero whenever a host restarts.
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TaskRedeliveries } from './facts';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const { EventType, TimeoutType, WorkflowTaskFailedCause } = temporal.api.enums.v1;

function emptyTaskRedeliveries(): TaskRedeliveries {
  return {
    workflowsRead: 0,
    unreadable: 0,
    workflowTasks: { scheduled: 0, timedOutStartToClose: 0, timedOutScheduleToStart: 0, failed: {} },
    activityTasks: {
      scheduled: 0,
      retriesByType: {},
      retries: 0,
      retriedAfterTimeout: { startToClose: 0, scheduleToStart: 0, heartbeat: 0 },
      timedOut: 0,
    },
  };
}

/** Adds one workflow history's tasks to `into`. */
function countTaskRedeliveries(events: HistoryEvent[], into: TaskRedeliveries): void {
  into.workflowsRead += 1;
  const activityTypes = new Map<string, string>();
  for (const event of events) {
    const id = String(event.eventId ?? '');
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
        into.workflowTasks.scheduled += 1;
        break;
      case EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT: {
        const type = event.workflowTaskTimedOutEventAttributes?.timeoutType;
        if (type === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
          into.workflowTasks.timedOutScheduleToStart += 1;
        else into.workflowTasks.timedOutStartToClose += 1;
        break;
      }
      case EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED: {
        const cause = event.workflowTaskFailedEventAttributes?.cause ?? 0;
        const name = (WorkflowTaskFailedCause[cause] ?? String(cause)).replace(
          'WORKFLOW_TASK_FAILED_CAUSE_',
          '',
        );
        into.workflowTasks.failed[name] = (into.workflowTasks.failed[name] ?? 0) + 1;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
        activityTypes.set(id, event.activityTaskScheduledEventAttributes?.activityType?.name ?? 'unknown');
        break;
      case EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED: {
        const attributes = event.activityTaskStartedEventAttributes;
        into.activityTasks.scheduled += 1;
        const retries = Math.max(0, (attributes?.attempt ?? 1) - 1);
        if (retries === 0) break;
        const type = activityTypes.get(String(attributes?.scheduledEventId ?? '')) ?? 'unknown';
        into.activityTasks.retries += retries;
        into.activityTasks.retriesByType[type] = (into.activityTasks.retriesByType[type] ?? 0) + retries;
        const timeout = attributes?.lastFailure?.timeoutFailureInfo?.timeoutType;
        if (timeout === TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE)
          into.activityTasks.retriedAfterTimeout.startToClose += 1;
        else if (timeout === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START)
          into.activityTasks.retriedAfterTimeout.scheduleToStart += 1;
        else if (timeout === TimeoutType.TIMEOUT_TYPE_HEARTBEAT)
          into.activityTasks.retriedAfterTimeout.heartbeat += 1;
        break;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
        into.activityTasks.timedOut += 1;
        break;
      default:
        break;
    }
  }
}

/** Reads the newest run's history of each workflow and adds up its tasks, a few histories at a time. */
export async function readTaskRedeliveries(
  client: Client,
  workflowIds: string[],
  concurrency = 8,
): Promise<TaskRedeliveries> {
  const totals = emptyTaskRedeliveries();
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < workflowIds.length) {
      const workflowId = workflowIds[next++]!;
      try {
        const history = await client.workflow.getHandle(workflowId).fetchHistory();
        countTaskRedeliveries(history.events ?? [], totals);
      } catch {
        totals.unreadable += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return totals;
}
