// `npm run ops -- retry <orderId> --reason …`: send again after the cause was fixed. The same operation as the
// Web UI's Reset (to the first workflow task); the claim decides what the new run may do, so a retry can never
// send a duplicate. Refused for a sent mail: that takes an explicit resolve first.
import os from 'node:os';
import { startOrderConfirmationMail } from '../client';
import { insertRetryAct, snapshotMailLog, type OperatorActRow } from '../db/operatorActs';
import { readMailLog } from '../db/orderMailLog';
import { orderExists } from '../db/orders';
import { parseOrderId } from '../shared/orderId';
import { OPS_RETRY_RESET_REASON_PREFIX } from '../temporal/resetHistory';
import { OpsRefusal, requireReason, type OpsContext } from './opsContext';
import { describeWorkflow, unknownOrder } from './orderMailStatus';
import { resetToFirstWorkflowTask } from './resetToFirstWorkflowTask';
import { refuseWhileSendInFlight } from './sendInFlight';

export type RetryResult =
  | { kind: 'reset'; orderId: string; previousRunId: string; newRunId: string; act: OperatorActRow }
  /** No workflow to reset (never started, or past the namespace's retention): started afresh instead. */
  | { kind: 'started'; orderId: string; newRunId: string | null; act: OperatorActRow };

export async function retryOrderMail(
  ctx: OpsContext,
  input: { orderId: string; reason: string | undefined },
): Promise<RetryResult> {
  const orderId = parseOrderId(input.orderId);
  const reason = requireReason(input.reason, 'retry');
  if (!(await orderExists(ctx.db, orderId))) throw unknownOrder(orderId);

  const row = await readMailLog(ctx.db, orderId);
  if (row?.state === 'sent') {
    throw new OpsRefusal(
      'ALREADY_SENT',
      `Order ${orderId}'s mail is recorded as sent (outcome ${row.outcome}, ${row.attempts} attempt(s), ` +
        `${row.updatedAt.toISOString()}), so a retry would send nothing: sent is final for automation. If the ` +
        `customer really did not get it (say the address was wrong and is now fixed), settle it as failed first, ` +
        `then retry:\n  npm run ops -- resolve ${orderId} --as failed --reason "…"\n` +
        `  npm run ops -- retry ${orderId} --reason "…"`,
    );
  }

  const workflow = await describeWorkflow(ctx, orderId);
  const rowBefore = await snapshotMailLog(ctx.db, orderId);
  const who = `${ctx.operator}: ${reason}`;
  if (workflow === null) {
    const started = await startOrderConfirmationMail(ctx.client, orderId, { taskQueue: ctx.taskQueue });
    const newRunId = started.status === 'started' ? started.runId : null;
    const act = await insertRetryAct(ctx.db, {
      orderId,
      reason,
      rowBefore,
      details: { started: started.status, newRunId },
    });
    return { kind: 'started', orderId, newRunId, act };
  }

  // A reset here would be safe (the claim settles the in-flight attempt by policy), but it would turn a send
  // that is about to finish normally into an unknown outcome.
  refuseWhileSendInFlight(orderId, row, workflow);

  const reset = await resetToFirstWorkflowTask(ctx.client, {
    workflowId: orderId,
    runId: workflow.runId,
    // The prefix tells the new run's claim that this reset is recorded by the act below (resetAct.ts).
    reason: `${OPS_RETRY_RESET_REASON_PREFIX}${who}`,
    // The operator's login, as the CLI's client names itself (src/cli/ops.ts).
    identity: `order-mail-ops ${ctx.operator}@${os.hostname()}`,
  });
  // Written after Temporal accepted the reset; should this insert fail, the reset's reason in the workflow's
  // history still says who did it and why.
  const act = await insertRetryAct(ctx.db, {
    orderId,
    reason,
    rowBefore,
    details: {
      reset: {
        previousRunId: reset.previousRunId,
        previousStatus: workflow.status,
        newRunId: reset.newRunId,
      },
      eventId: reset.eventId,
    },
  });
  return { kind: 'reset', orderId, previousRunId: reset.previousRunId, newRunId: reset.newRunId, act };
}
