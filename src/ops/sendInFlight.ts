// The refusal retry and resolve share: no act on a row whose dispatched send of an open run is in flight
// (docs/design.md §4 rule 5).
import type { MailLogRow } from '../db/orderMailLog';
import { OpsRefusal } from './opsContext';
import type { OrderMailWorkflowSummary } from './orderMailStatus';

export function refuseWhileSendInFlight(
  orderId: string,
  row: MailLogRow | null,
  workflow: OrderMailWorkflowSummary | null,
): void {
  if (workflow?.status === 'RUNNING' && row?.state === 'sending' && row.dispatchedAt !== null) {
    throw new OpsRefusal(
      'SEND_IN_FLIGHT',
      `Order ${orderId}'s mail is being sent right now (dispatched ${row.dispatchedAt.toISOString()}, run ` +
        `${workflow.runId}). It settles by itself, at the latest when the send activity times out; look again ` +
        `with: npm run ops -- status ${orderId}`,
    );
  }
}
