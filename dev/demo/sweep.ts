// The reconciliation sweep in a run (src/workflows/reconcileOrderMails.ts): its real Schedule on the run's task
// queue while orders flow, as `npm run setup` creates it in production, and a last sweep started by hand at
// the end, once the rows have been quiet for the sweep's grace, so a row that a closed run (a terminate, a
// cancel that could not clean up) left behind is dealt with before the report looks at it.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Database } from '../../src/db/pool';
import { ensureSweepSchedule } from '../../src/temporal/sweepSchedule';
import { reconcileOrderMails, type SweepReport } from '../../src/workflows/reconcileOrderMails';

/** The grace the run's workers are given (RECONCILE_GRACE_MS): past the send timeout, so no live send is quiet. */
export const RUN_SWEEP_GRACE_MS = 10_000;
const FINAL_SWEEPS = 3;
// A sweep that left a claim for later (its request too young to ask the provider about) is run again after
// this, however often, until the run's deadline.
const LEFT_FOR_LATER_WAIT_MS = 2_000;

export interface SweepFacts {
  /** Every how often the Schedule ran the sweep during the run; 0 = it had none. */
  scheduleEveryMs: number;
  /** Sweeps the Schedule started during the run. */
  scheduledRuns: number;
  /** Sweeps started by hand at the end, and what the last one reported. */
  finalRuns: number;
  /**
   * Attempts of the run's orders that a sweep settled (its audit rows say 'reconciliation sweep …'): rows a
   * closed run left 'sending'. 0 where the sweep only reports such rows.
   */
  settledBySweep: number;
  /** 'sending' rows left after the last sweep, and the last sweep's count of rows it found stuck under a closed run. */
  sendingRowsLeft: number;
  lastReport: (Pick<SweepReport, 'found' | 'started' | 'alreadyStarted'> & { stuck: number }) | null;
}

export interface RunSweeps {
  /** Runs the sweep by hand until no row is 'sending' or FINAL_SWEEPS sweeps made no difference. */
  finish(deadline: number, say: (line: string) => void): Promise<void>;
  facts(): Promise<SweepFacts>;
  stop(): Promise<void>;
}

export async function startRunSweeps(options: {
  client: Client;
  db: Database;
  taskQueue: string;
  runId: string;
  orderIds: string[];
  everyMs: number;
}): Promise<RunSweeps> {
  const { client, db, taskQueue } = options;
  const scheduleId = `reconcile-${options.runId}`;
  if (options.everyMs > 0) {
    await ensureSweepSchedule(client, { scheduleId, taskQueue, intervalMs: options.everyMs });
  }
  let finalRuns = 0;
  let lastReport: SweepFacts['lastReport'] = null;

  const sendingRows = async (): Promise<{ count: number; quietForMs: number }> => {
    const { rows } = await db.query<{ count: number; quiet_ms: number | null }>(
      `SELECT count(*)::int AS count,
              (extract(epoch FROM now() - max(updated_at)) * 1000)::float8 AS quiet_ms
         FROM order_mail_log WHERE state = 'sending' AND order_id = ANY($1::bigint[])`,
      [options.orderIds],
    );
    return { count: rows[0]?.count ?? 0, quietForMs: rows[0]?.quiet_ms ?? Number.POSITIVE_INFINITY };
  };

  return {
    async finish(deadline, say) {
      for (let sweep = 0, unchanged = 0; unchanged < FINAL_SWEEPS; sweep++) {
        let rows = await sendingRows();
        if (rows.count === 0 && sweep > 0) return;
        // The sweep only looks at rows quiet for its grace: wait for them to be, then sweep.
        while (rows.count > 0 && rows.quietForMs < RUN_SWEEP_GRACE_MS + 1_000 && Date.now() < deadline) {
          await sleep(Math.min(1_000, RUN_SWEEP_GRACE_MS + 1_000 - rows.quietForMs));
          rows = await sendingRows();
        }
        if (Date.now() >= deadline) return;
        finalRuns += 1;
        const report = await client.workflow.execute(reconcileOrderMails, {
          workflowId: `${scheduleId}-final-${finalRuns}`,
          taskQueue,
          args: [{}],
          workflowExecutionTimeout: '2 minutes',
        });
        lastReport = {
          found: report.found,
          started: report.started,
          alreadyStarted: report.alreadyStarted,
          stuck: report.stuck.length,
        };
        const after = await sendingRows();
        say(
          `sweep ${finalRuns}: ${rows.count} rows 'sending' before, ${after.count} after; ` +
            `found ${report.stuck.length} stuck under a closed run, started ${report.started} missed orders`,
        );
        if (after.count === 0) return;
        if (report.leftForLater > 0) {
          await sleep(LEFT_FOR_LATER_WAIT_MS);
          continue;
        }
        if (after.count === rows.count) unchanged += 1;
      }
    },
    async facts() {
      let scheduledRuns = 0;
      if (options.everyMs > 0) {
        const description = await client.schedule.getHandle(scheduleId).describe();
        scheduledRuns = description.info.numActionsTaken;
      }
      const { rows } = await db.query<{ settled: number }>(
        `SELECT count(*)::int AS settled FROM order_mail_attempts
          WHERE order_id = ANY($1::bigint[]) AND recorded_by LIKE 'reconciliation sweep%'`,
        [options.orderIds],
      );
      return {
        scheduleEveryMs: options.everyMs,
        scheduledRuns,
        finalRuns,
        settledBySweep: rows[0]?.settled ?? 0,
        sendingRowsLeft: (await sendingRows()).count,
        lastReport,
      };
    },
    async stop() {
      if (options.everyMs > 0)
        await client.schedule
          .getHandle(scheduleId)
          .delete()
          .catch(() => undefined);
    },
  };
}
