// The send key: the same on every automatic attempt, new only for an operator's re-send, and naming the
// deployment; Resend suggests `<event-type>/<entity-id>` (resend.com/docs/dashboard/emails/idempotency-keys).
// Why: docs/providers.md, "The send key" and "Idempotency windows".
import { DEPLOYMENT_ID_PATTERN } from '../evidence/messageIdentity';

export function orderConfirmationSendKey(deploymentId: string, orderId: string, resendCount: number): string {
  if (!Number.isSafeInteger(resendCount) || resendCount < 0) {
    throw new RangeError(`resendCount must be a non-negative integer (got ${resendCount})`);
  }
  if (!DEPLOYMENT_ID_PATTERN.test(deploymentId)) {
    throw new RangeError(
      `deploymentId must match ${String(DEPLOYMENT_ID_PATTERN)} (got ${JSON.stringify(deploymentId)})`,
    );
  }
  return `order-confirmation/${deploymentId}/${orderId}/${resendCount}`;
}
