// The idempotency key of an order's confirmation mail, for providers that dedupe by key (Resend).
// It changes only when an operator deliberately re-sends (resolve --as failed bumps the row's resend_count):
// every automatic attempt of one send carries the same key, across the workflow's own retries, resets and
// worker restarts, so a repeat inside the provider's window is answered from its store and sends nothing; a
// re-send is a new key, so it really sends instead of getting the earlier request's cached answer. Resend
// suggests the `<event-type>/<entity-id>` form (resend.com/docs/dashboard/emails/idempotency-keys).

export function orderConfirmationIdempotencyKey(orderId: string, resendCount: number): string {
  if (!Number.isSafeInteger(resendCount) || resendCount < 0) {
    throw new RangeError(`resendCount must be a non-negative integer (got ${resendCount})`);
  }
  return `order-confirmation/${orderId}/${resendCount}`;
}
