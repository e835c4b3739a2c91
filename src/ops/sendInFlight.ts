// The one refusal `retry` and `resolve` share (docs/design.md §4 rule 5): an operator does not act on a row whose
// dispatched send of an open run is in flight. It settles by itself, at the latest when the send activity
// times out, and acting now would turn a send that is about to finish normally into an unknown outcome (or,
// for resolve, drop the provider's answer on the floor).
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
