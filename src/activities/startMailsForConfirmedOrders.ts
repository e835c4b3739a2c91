// The sweep's first job (G3): start confirmed orders with no log row, a bounded batch at a time.
import { activityInfo, heartbeat, log } from '@temporalio/activity';
import { OrderMailWorkflowIdTakenError, RESTARTED_BY_MEMO, startOrderConfirmationMail } from '../client';
import { findConfirmedOrdersWithoutMail, type ConfirmedOrderCursor } from '../db/confirmedOrders';
import { readMailLog } from '../db/orderMailLog';
import { advanceSweepProgress, sweepNotBefore } from '../db/sweepProgress';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import type { SweepDependencies, SecondLookMail, StartBatchResult, WorkflowIdConflict } from './sweepTypes';
import { createSecondLook } from './secondLook';

export function createStartMailsForConfirmedOrders(deps: SweepDependencies, mail?: SecondLookMail) {
  const secondLook = mail === undefined ? null : createSecondLook(deps, mail);
  /** One bounded batch: finds confirmed orders without a log row and starts each one's workflow. */
  return async function startMailsForConfirmedOrders(input: {
    after: ConfirmedOrderCursor | null;
  }): Promise<StartBatchResult> {
    const { settings } = deps;
    // Once per sweep, with its first batch: the second look. A reopened order has a row, so it starts there.
    const looked = input.after === null && secondLook !== null ? await secondLook() : undefined;
    const progress = { namespace: activityInfo().namespace, graceMs: settings.graceMs };
    // Since the last complete sweep only (src/db/sweepProgress.ts), within the look-back window.
    const notBefore = await sweepNotBefore(deps.db, {
      ...progress,
      lookbackMs: settings.lookbackMs,
      confirmedSince: settings.confirmedSince,
    });
    const batch = await findConfirmedOrdersWithoutMail(deps.db, {
      graceMs: settings.graceMs,
      notBefore,
      after: input.after,
      limit: settings.batchSize,
    });
    // The order service's id policy: a start that raced with it is reported already started, and sends nothing.
    const taskQueue = activityInfo().taskQueue;
    let started = 0;
    let restarted = 0;
    const closedWithoutRow: string[] = [];
    const conflicts: WorkflowIdConflict[] = [];
    for (const orderId of batch.orderIds) {
      try {
        const result = await startOrderConfirmationMail(deps.temporal, orderId, {
          taskQueue,
          // A run closed before its first claim is started again once; a second such closing is named, not retried.
          restartClosedRun: {
            by: 'reconciliation sweep',
            approve: async (closed) => {
              if ((await readMailLog(deps.db, orderId)) !== null) return false;
              if (closed.memo?.[RESTARTED_BY_MEMO] !== undefined) {
                closedWithoutRow.push(orderId);
                return false;
              }
              return true;
            },
          },
        });
        if (result.status === 'started') {
          started += 1;
          log.info('Reconciliation started a missed order mail', { orderId, runId: result.runId });
        } else if (result.status === 'restarted') {
          restarted += 1;
          log.info('Reconciliation started again an order mail whose run closed before its first claim', {
            orderId,
            runId: result.runId,
            closedRunId: result.closedRunId,
            closedRunStatus: result.closedRunStatus,
          });
        }
      } catch (error) {
        if (!(error instanceof OrderMailWorkflowIdTakenError)) throw error;
        // Not ours to start, and retrying will not free the id: report it, and go on with the batch.
        log.warn('Order mail not started: its workflow id is held by another workflow type', {
          orderId,
          workflowType: error.workflowType,
          runId: error.runId,
        });
        conflicts.push({ orderId, workflowType: error.workflowType, runId: error.runId });
      }
      heartbeat();
    }
    const metrics = deps.metrics ?? noOrderMailMetrics;
    for (const _ of closedWithoutRow) metrics.orderLeftWithoutMail('closed-without-row');
    for (const _ of conflicts) metrics.orderLeftWithoutMail('workflow-id-taken');
    if (closedWithoutRow.length > 0) {
      log.warn('Order mails whose restarted run closed again before its first claim: not started again', {
        orders: closedWithoutRow,
        hint: 'see why the run closed (npm run ops -- status <orderId>), fix it, then npm run ops -- retry',
      });
    }
    // The last batch: every order up to the grace was looked at, so the mark may move (docs/design.md §7).
    if (batch.next === null) await advanceSweepProgress(deps.db, progress);
    return {
      found: batch.orderIds.length,
      started,
      restarted,
      closedWithoutRow,
      alreadyStarted:
        batch.orderIds.length - started - restarted - closedWithoutRow.length - conflicts.length,
      conflicts,
      next: batch.next,
      ...(looked === undefined ? {} : { secondLook: looked }),
    };
  };
}
