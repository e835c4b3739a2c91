// The idempotency key of an order's confirmation mail, for providers that dedupe by key (Resend).
// Derived from the order id only, so it is the same for every attempt of the order: across the workflow's
// own retries, across an operator's reset (a new run id), across worker restarts. Resend suggests the
// `<event-type>/<entity-id>` form (resend.com/docs/dashboard/emails/idempotency-keys).

export function orderConfirmationIdempotencyKey(orderId: string): string {
  return `order-confirmation/${orderId}`;
}
