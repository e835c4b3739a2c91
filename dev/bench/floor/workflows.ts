// The floor: the product workflow's shape (claim → send → record, same options, same payload sizes) with
// activities that do nothing. What it costs is Temporal's own cost for this shape: the floor the product
// can at best reach. Registered by dev/bench/floor/worker.ts on a task queue of its own, never by src/worker.ts.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities';

// The same options as src/workflows/orderConfirmationMail.ts.
const BOOKKEEPING_OPTIONS = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
} as const;
const regularBookkeeping = proxyActivities<FloorActivities>(BOOKKEEPING_OPTIONS);
const localBookkeeping = proxyLocalActivities<FloorActivities>(BOOKKEEPING_OPTIONS);
const sender = proxyActivities<FloorActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { maximumAttempts: 1 },
});

async function floorShape(orderId: string, bookkeeping: typeof regularBookkeeping): Promise<number> {
  const claim = await bookkeeping.claimOrderMail({ orderId });
  const sent = await sender.sendOrderMail({ orderId, claimToken: claim.claimToken, attempt: claim.attempt });
  const recorded = await bookkeeping.recordOrderMailOutcome({
    orderId,
    claimToken: claim.claimToken,
    attempt: claim.attempt,
    state: 'sent',
    outcome: 'accepted',
    unknownPolicy: null,
    providerMessageId: sent.providerMessageId,
    httpStatus: sent.httpStatus,
    error: null,
  });
  // When the record step ran (worker clock, epoch ms): the floor's "recorded row".
  return recorded.recordedAtMs;
}

/** Three regular no-op activities, as the product is without local bookkeeping. */
export async function benchFloorRegular(orderId: string): Promise<number> {
  return floorShape(orderId, regularBookkeeping);
}

/** Claim and record as local no-op activities, the send regular. */
export async function benchFloorLocal(orderId: string): Promise<number> {
  return floorShape(orderId, localBookkeeping);
}

/** No activity at all: what one workflow start, one workflow task and one completion cost. */
export async function benchEmpty(_orderId: string): Promise<number> {
  return Date.now();
}
