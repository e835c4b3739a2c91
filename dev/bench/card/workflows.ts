// The user's design card built plainly on Temporal: claim → one POST → record, and the one branch the card
// has, a timeout counted as sent against a 4xx counted as failed. Bench-only: registered by
// dev/bench/card/worker.ts on a task queue of its own, never by src/worker.ts (docs/benchmarks.md, "card").
import {
  ActivityFailure,
  ApplicationFailure,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { SendResult } from '../../../src/shared/mailOutcome';
import type { CardActivities } from './activities';
import type { CardOutcome } from './statements';

// The product's options (src/workflows/commands.ts): claim and record local, retried; the send regular, once.
const bookkeeping = proxyLocalActivities<CardActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  localRetryThreshold: '10 seconds',
});
const sender = (sendTimeoutMs: number) =>
  proxyActivities<CardActivities>({ startToCloseTimeout: sendTimeoutMs, retry: { maximumAttempts: 1 } });

export interface CardResult {
  orderId: string;
  result: 'sent' | 'not-claimed';
  outcome: CardOutcome['outcome'] | null;
}

/** What the card records for one send: accepted or timed out is sent, a refusal (4xx) or nothing sent failed. */
export function cardOutcomeOf(sent: SendResult): CardOutcome {
  switch (sent.outcome) {
    case 'accepted':
      return {
        state: 'sent',
        outcome: 'accepted',
        providerMessageId: sent.providerMessageId,
        httpStatus: sent.httpStatus,
        error: null,
      };
    case 'unknown':
      return {
        state: 'sent',
        outcome: 'unknown',
        providerMessageId: null,
        httpStatus: sent.httpStatus,
        error: sent.reason,
      };
    case 'rejected':
    case 'not_sent':
      return {
        state: 'failed',
        outcome: sent.outcome,
        providerMessageId: null,
        httpStatus: sent.httpStatus,
        error: sent.reason,
      };
  }
}

export async function benchCardMail(orderId: string): Promise<CardResult> {
  const claim = await bookkeeping.claimCardMail({ orderId });
  if (claim.kind !== 'claimed') return { orderId, result: 'not-claimed', outcome: null };
  let outcome: CardOutcome;
  try {
    outcome = cardOutcomeOf(await sender(claim.sendTimeoutMs).sendCardMail({ orderId }));
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // The activity's own timeout: the request may have arrived, so it counts as sent, as the card says. Any
    // other failure is the activity's before its request (the transport answers, never throws): not sent.
    outcome =
      error.cause instanceof TimeoutFailure
        ? {
            state: 'sent',
            outcome: 'unknown',
            providerMessageId: null,
            httpStatus: null,
            error: error.message,
          }
        : {
            state: 'failed',
            outcome: 'not_sent',
            providerMessageId: null,
            httpStatus: null,
            error: error.message,
          };
  }
  await bookkeeping.recordCardMail({ orderId, claimToken: claim.claimToken, outcome });
  if (outcome.state === 'failed') {
    // Failed rows may be claimed again: by a new start, which the card leaves to whoever starts it.
    throw ApplicationFailure.nonRetryable(
      `order ${orderId}: ${outcome.error ?? outcome.outcome}`,
      'CardMailFailed',
    );
  }
  return { orderId, result: 'sent', outcome: outcome.outcome };
}
