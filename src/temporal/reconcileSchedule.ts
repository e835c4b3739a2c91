// The Temporal Schedule that runs the reconciliation sweep every few minutes (docs/design.md §7), created or
// brought up to date by `npm run setup`, so setup can run any number of times.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { reconcileOrderMails } from '../workflows/reconcileOrderMails';

export const DEFAULT_RECONCILE_SCHEDULE_ID = 'order-mail-reconcile';

export interface ReconcileScheduleOptions {
  scheduleId?: string;
  /** The task queue of the workers that run the sweep (and the mails it starts). */
  taskQueue: string;
  intervalMs: number;
  /** Created paused (tests trigger it by hand). An existing schedule keeps its own paused state. */
  paused?: boolean;
}

/** Creates the schedule, or updates the existing one to these options. Returns which it did. */
export async function ensureReconcileSchedule(
  client: Client,
  options: ReconcileScheduleOptions,
): Promise<'created' | 'updated'> {
  const scheduleId = options.scheduleId ?? DEFAULT_RECONCILE_SCHEDULE_ID;
  const spec = { intervals: [{ every: options.intervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: reconcileOrderMails,
    // Temporal appends the scheduled time, so each sweep's run has its own id.
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: [{}] as [Record<string, never>],
  };
  // One sweep at a time: a slow sweep makes the next one wait its turn instead of racing it. A sweep missed
  // while the server was down is made up once, not once per missed interval.
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: options.intervalMs };
  try {
    await client.schedule.create({
      scheduleId,
      spec,
      action,
      policies,
      state: {
        paused: options.paused ?? false,
        note: options.paused ? 'created paused' : 'created by npm run setup',
      },
    });
    return 'created';
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  await client.schedule.getHandle(scheduleId).update((previous) => ({
    ...previous,
    spec,
    action,
    policies: { ...previous.policies, ...policies },
    state: { ...previous.state },
  }));
  return 'updated';
}
