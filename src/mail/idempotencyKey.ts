// The send key of an order's confirmation mail: the idempotency key for providers that dedupe by key (Resend),
// and what every provider is asked by afterwards (src/evidence/). It names the deployment (MAIL_DEPLOYMENT_ID),
// so a staging system with the same order ids on the same provider account neither dedupes against nor
// "finds" production's mail. It changes only when an operator deliberately re-sends (resolve --as failed
// bumps the row's resend_count): every automatic attempt of one send carries the same key, across the
// workflow's own retries, resets and worker restarts, so a repeat inside the provider's window is answered
// from its store and sends nothing; a re-send is a new key, so it really sends instead of getting the earlier
// request's cached answer. Resend suggests the `<event-type>/<entity-id>` form
// (resend.com/docs/dashboard/emails/idempotency-keys).
import { DEPLOYMENT_ID_PATTERN } from '../evidence/messageIdentity';

export function orderConfirmationIdempotencyKey(
  deploymentId: string,
  orderId: string,
  resendCount: number,
): string {
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
