import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { timeSinceAttemptDispatch, timeSinceKeyFirstDispatch } from '../db/orderMailLog';
import { FailureType } from '../shared/failures';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import { notFoundIsEvidence } from '../verification/providerLookup';
import { findSendEvidence } from '../webhooks/providerEvents';
import type { ActivityDependencies } from './dependencies';

export interface VerifyOrderMailInput {
  orderId: string;
  claimToken: string;
  attempt: number;
  /** The key this attempt's request carried (the claim's idempotency key), which the provider is asked by. */
  sendKey: string;
  /**
   * How long after its dispatch the request may still have been under way (a closed run's send, which nobody
   * waited for: its send timeout). The settle delay counts from the request's end, so "not found" is
   * evidence only this much later. 0 (absent) for the run's own send, whose end it waited for.
   */
  requestMayLastMs?: number;
}

/**
 * Asks the provider whether this attempt's send reached it, after the workflow waited the settle delay: first
 * the webhook events we received for the send (src/webhooks/), then the provider's lookup by the send key
 * (src/verification/). Found → the send was accepted. Not found → not sent, but only when the lookup came
 * after the settle delay since the request and inside the provider's retention since the key's first request
 * (both on Postgres's clock); otherwise inconclusive. A failing lookup is thrown as a retryable failure:
 * Temporal retries it until the activity's schedule-to-close deadline, and then the policy decides.
 * Read-only at our end and at the provider's, so retrying it is harmless.
 */
export function createVerifyOrderMail(deps: ActivityDependencies) {
  return async function verifyOrderMail(input: VerifyOrderMailInput): Promise<VerificationAnswer> {
    const { orderId } = input;
    const verifier = deps.verifier;
    if (verifier === undefined) {
      return inconclusive(orderId, 'this worker has no verification configured (MAIL_VERIFY is off)');
    }
    const sinceDispatchMs = await timeSinceAttemptDispatch(deps.db, input);
    if (sinceDispatchMs === null) {
      return inconclusive(
        orderId,
        'the attempt is no longer in flight under this run, so there is nothing to verify',
      );
    }
    if (verifier.webhookProvider !== null) {
      const event = await findSendEvidence(deps.db, {
        orderId,
        sendKey: input.sendKey,
        provider: verifier.webhookProvider,
      });
      if (event !== null) {
        log.info('Order mail verified accepted by a webhook event', {
          orderId,
          attempt: input.attempt,
          event: event.eventType,
        });
        return { kind: 'found', via: 'webhook', providerMessageId: event.providerMessageId };
      }
    }
    if (verifier.lookup === null) {
      return inconclusive(
        orderId,
        `no ${verifier.webhookProvider ?? 'provider'} event for this send within the settle delay, and a missing ` +
          'event proves nothing (the provider retries its webhooks for hours)',
      );
    }
    const answer = await verifier.lookup.lookUp({ orderId, sendKey: input.sendKey });
    switch (answer.kind) {
      case 'found':
        log.info('Order mail verified accepted by the provider lookup', { orderId, attempt: input.attempt });
        return { kind: 'found', via: 'lookup', providerMessageId: answer.providerMessageId };
      case 'inconclusive':
        return inconclusive(orderId, answer.reason);
      case 'failed':
        log.warn('Order mail lookup failed; retried until the verification deadline', {
          orderId,
          attempt: input.attempt,
          reason: answer.reason,
        });
        throw ApplicationFailure.create({
          type: FailureType.VerificationLookupFailed,
          message: answer.reason,
          nonRetryable: false,
          ...(answer.retryAfterMs === null ? {} : { nextRetryDelay: answer.retryAfterMs }),
        });
      case 'not-found': {
        const evidence = notFoundIsEvidence({
          sinceDispatchMs,
          sinceKeyFirstDispatchMs: (await timeSinceKeyFirstDispatch(deps.db, orderId)) ?? sinceDispatchMs,
          settleDelayMs: verifier.settleDelayMs + (input.requestMayLastMs ?? 0),
          retentionMs: verifier.retentionMs,
        });
        if (!evidence.evidence) return inconclusive(orderId, `the lookup found nothing, but ${evidence.why}`);
        log.info('Order mail verified not sent: the provider lookup has no message of this send', {
          orderId,
          attempt: input.attempt,
          sinceDispatchMs,
        });
        return { kind: 'not-found', via: 'lookup', sinceDispatchMs };
      }
    }
  };
}

function inconclusive(orderId: string, reason: string): VerificationAnswer {
  log.info('Order mail verification inconclusive; the policy decides', { orderId, reason });
  return { kind: 'inconclusive', reason };
}
