// One attempt of the run: claim, then (unless cancelled meanwhile) send through the dispatch fence and record.
// It turns every way an attempt can end into one Step for the loop's table (src/workflows/orderConfirmationMail.ts).
import { ActivityFailure, ApplicationFailure, log, patched } from '@temporalio/workflow';
import type { ClaimResult } from '../activities';
import { FailureType } from '../shared/failures';
import { SEND_HELD, sendOutcomeOfFailure, type SendOutcome } from '../shared/sendOutcome';
import type { EarlyAsk } from './askProvider';
import type { Claimed, OrderMailResult, Step } from './attemptStep';
import { bookkeeping, sender } from './commands';
import { claimLost, heldByAnotherWorkflowFailure } from './endings';
import { SEND_HOLD_WAITS } from './holdWait';
import { showNoClaim, showOrderMailState, stateShownFor } from './showOrderMailState';
import { recordSendOutcome } from './recordSend';
import { verifyOrphan } from './verificationWaits';

/** One attempt of this run: claim, then (unless cancelled meanwhile) send and record. Non-cancellable. */
export async function oneAttempt(
  orderId: string,
  runAttempts: number,
  cancelRequested: () => boolean,
  early: EarlyAsk,
): Promise<Step> {
  const claim = await claimOrFail(orderId);
  if (claim.kind === 'order-not-visible') return claim;
  if (claim.kind === 'already-sent') {
    log.info('Order mail was already sent; this run sends nothing', { orderId, outcome: claim.outcome });
    showOrderMailState({
      state: stateShownFor('sent', claim.outcome),
      outcome: claim.outcome,
      attempts: claim.attempts,
    });
    return {
      kind: 'finished',
      result: {
        orderId,
        result: 'already-sent',
        outcome: claim.outcome,
        attempts: claim.attempts,
        providerMessageId: null,
        explanation:
          `Order ${orderId}: the confirmation mail is already recorded as sent (outcome ${claim.outcome}, ` +
          `${claim.attempts} attempt(s)), so this run sent nothing. A sent mail is final for automation: to ` +
          'send it again, an operator resolves it as failed first (npm run ops -- resolve), then retries.',
      },
    };
  }
  if (claim.kind === 'held-elsewhere') {
    if (claim.sameWorkflow) return { kind: 'held-at-same-time', holder: claim.holder };
    throw heldByAnotherWorkflowFailure(orderId, claim.holder);
  }

  if (claim.kind === 'verify-orphan') return verifyOrphan(orderId, claim, cancelRequested, early);

  const { attempt, claimToken, settings } = claim;
  const base = { orderId, claimToken, attempt };
  showOrderMailState({ state: 'sending', outcome: null, attempts: attempt, httpStatus: null });
  if (cancelRequested()) {
    // Cancelled while claiming: nothing was dispatched, so the claim is released as not sent.
    await bookkeeping.recordOrderMailOutcome({
      ...base,
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: null,
      error: 'no request was made: the workflow was cancelled before this attempt sent anything',
      expectDispatched: false,
    });
    showOrderMailState({ state: 'failed', outcome: 'not_sent' });
    return { kind: 'released', attempt };
  }

  const { sent, failure } = await send(orderId, claim);
  if (sent.outcome === 'claim-lost') {
    const { currentState, currentOutcome } = sent.row;
    if (currentState !== null && currentState !== 'sending') {
      showOrderMailState({ state: stateShownFor(currentState, currentOutcome), outcome: currentOutcome });
    }
    const result = claimLost(orderId, attempt, currentOutcome, null);
    // The fence refused: this attempt made no request.
    if (currentState === 'sending') return { kind: 'lost-while-held', result };
    return { kind: 'finished', result };
  }

  const { recorded, providerMessageId, sentNothing } = await recordSendOutcome(base, sent, claim, {
    runAttempts,
    cancelRequested,
    early,
  });
  if (recorded.kind === 'claim-lost') {
    if (recorded.currentState !== null && recorded.currentState !== 'sending') {
      showOrderMailState({ state: recorded.currentState });
    }
    // The row is someone else's now; an accepted mail's id went into the attempt's audit row instead.
    const result =
      sent.outcome === 'accepted'
        ? claimLost(orderId, attempt, 'accepted', sent.providerMessageId)
        : claimLost(orderId, attempt, null, null);
    if (recorded.currentState === 'sending' && sentNothing) return { kind: 'lost-while-held', result };
    return { kind: 'finished', result };
  }
  if (
    sent.outcome === 'not_sent' &&
    sent.errorCode === SEND_HELD &&
    recorded.state === 'failed' &&
    patched(SEND_HOLD_WAITS)
  ) {
    // The Web UI's filter for held orders (docs/operating.md): OrderMailState = "held".
    showOrderMailState({ state: 'held', outcome: recorded.outcome, httpStatus: null });
    return { kind: 'held', attempt };
  }
  showOrderMailState({
    state: stateShownFor(recorded.state, recorded.outcome),
    outcome: recorded.outcome,
    httpStatus: sent.httpStatus,
  });
  if (recorded.state === 'sent' || sent.outcome === 'accepted') {
    // The provider's id: its answer, or what verification found; none when the policy assumed it sent.
    const result: OrderMailResult = {
      orderId,
      result: 'sent',
      outcome: recorded.outcome,
      attempts: attempt,
      providerMessageId,
    };
    return { kind: 'finished', result };
  }
  return { kind: 'not-accepted', attempt, settings, sent, cause: failure, recordedOutcome: recorded.outcome };
}

/**
 * The send, waited for to its real end: it is NEVER retried by Temporal (a retry after an unknown outcome
 * could send a second mail) and, running in the attempt's non-cancellable scope, never abandoned by a
 * cancel mid-request. Its options are the sender's (src/workflows/commands.ts). Its outcome is the one shape
 * the activity returns or carries in its failure (src/shared/sendOutcome.ts); the failure is kept as the cause
 * of a run that fails for it.
 */
async function send(
  orderId: string,
  claim: Claimed,
): Promise<{ sent: SendOutcome; failure?: ActivityFailure }> {
  try {
    const sent = await sender(claim.settings.sendTimeoutMs).sendOrderMail({
      orderId,
      claimToken: claim.claimToken,
      attempt: claim.attempt,
      idempotencyKey: claim.idempotencyKey,
    });
    return { sent };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { sent: sendOutcomeOfFailure(error), failure: error };
  }
}

// Runs whose history predates it failed OrderNotFound at the first claim that found no order; newer runs wait for
// the order a bounded time (src/workflows/orderConfirmationMail.ts).
export const ORDER_NOT_VISIBLE_YET_WAITS = 'order-not-visible-yet-waits';

/**
 * The claim, with a missing order turned into the workflow's own OrderNotFound failure: handed to the loop,
 * which waits for the order and claims again, or (a history from before the wait) thrown at once.
 */
async function claimOrFail(
  orderId: string,
): Promise<ClaimResult | Extract<Step, { kind: 'order-not-visible' }>> {
  try {
    // The workflow's clock: the server's time of this workflow task (src/db/orderMailClaim.ts).
    return await bookkeeping.claimOrderMail({ orderId, issuedAtMs: Date.now() });
  } catch (error) {
    // A local activity's failure reaches the workflow as the activity's own ApplicationFailure (seen with
    // SDK 1.24); a regular activity's would be wrapped in an ActivityFailure. Both mean the same here.
    const failure = error instanceof ActivityFailure ? error.cause : error;
    if (failure instanceof ApplicationFailure && failure.type === FailureType.OrderNotFound) {
      const notFound = ApplicationFailure.create({
        type: FailureType.OrderNotFound,
        message: failure.message,
        nonRetryable: true,
        cause: error instanceof Error ? error : undefined,
      });
      if (patched(ORDER_NOT_VISIBLE_YET_WAITS)) return { kind: 'order-not-visible', failure: notFound };
      showNoClaim();
      throw notFound;
    }
    throw error;
  }
}
