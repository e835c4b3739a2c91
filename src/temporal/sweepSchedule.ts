// The sweep's Schedule (docs/design.md §7); `npm run setup` creates or updates it, any number of times.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client } from '@temporalio/client';
import { reconcileOrderMails } from '../workflows/reconcileOrderMails';

export const DEFAULT_SWEEP_SCHEDULE_ID = 'order-mail-reconcile';

export interface SweepScheduleOptions {
  scheduleId?: string;
  taskQueue: string;
  intervalMs: number;
  /** Created paused (tests trigger it by hand). An existing schedule keeps its own paused state. */
  paused?: boolean;
}

export async function ensureSweepSchedule(
  client: Client,
  options: SweepScheduleOptions,
): Promise<'created' | 'updated'> {
  const scheduleId = options.scheduleId ?? DEFAULT_SWEEP_SCHEDULE_ID;
  const spec = { intervals: [{ every: options.intervalMs }] };
  const action = {
    type: 'startWorkflow' as const,
    workflowType: reconcileOrderMails,
    // Temporal appends the scheduled time, so each sweep's run has its own id.
    workflowId: scheduleId,
    taskQueue: options.taskQueue,
    args: [{}] as [Record<string, never>],
  };
  // One sweep at a time; missed ones are made up once (docs/design.md §6, "The sweep's Schedule").
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
