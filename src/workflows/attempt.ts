// One attempt of the run: claim, then (unless cancelled meanwhile) send through the dispatch fence and record.
// It turns every way an attempt can end into one Step for the loop's table (src/workflows/orderConfirmationMail.ts).
import { ActivityFailure, ApplicationFailure, log } from '@temporalio/workflow';
import type { ClaimResult } from '../activities';
import { FailureType } from '../shared/failures';
import { delayBeforeNextAttempt } from '../shared/workflowSettings';
import type { EarlyAsk } from './askProvider';
import type { Claimed, Step } from './attemptStep';
import { bookkeeping, sender } from './commands';
import { claimLost, heldByAnotherWorkflowFailure } from './endings';
import { verdictOfSendFailure, type SendVerdict } from './sendVerdict';
import { showNoClaim, showOrderMailState, stateShownFor } from './showOrderMailState';
import { recordNotAccepted } from './unknownOutcomePath';
import { verifyOrphan } from './verificationWaits';

/** One attempt of this run: claim, then (unless cancelled meanwhile) send and record. Non-cancellable. */
export async function oneAttempt(
  orderId: string,
  runAttempts: number,
  cancelRequested: () => boolean,
  early: EarlyAsk,
): Promise<Step> {
  const claim = await claimOrFail(orderId);
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

  const verdict = await send(orderId, claim);
  if (verdict.kind === 'claim-lost') {
    const { currentState, currentOutcome } = verdict.row;
    if (currentState !== null && currentState !== 'sending') {
      showOrderMailState({ state: stateShownFor(currentState, currentOutcome), outcome: currentOutcome });
    }
    const result = claimLost(orderId, attempt, currentOutcome, null);
    // The fence refused: this attempt made no request.
    if (currentState === 'sending') return { kind: 'lost-while-held', result };
    return { kind: 'finished', result };
  }

  if (verdict.kind === 'accepted') {
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...base,
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      providerMessageId: verdict.providerMessageId,
      httpStatus: verdict.httpStatus,
      error: null,
      expectDispatched: null,
    });
    if (recorded.kind === 'recorded') {
      showOrderMailState({
        state: stateShownFor(recorded.state, recorded.outcome),
        outcome: recorded.outcome,
        httpStatus: verdict.httpStatus,
      });
      return {
        kind: 'finished',
        result: {
          orderId,
          result: 'sent',
          outcome: recorded.outcome,
          attempts: attempt,
          providerMessageId: verdict.providerMessageId,
        },
      };
    }
    // The row is someone else's now; the provider's id went into the attempt's audit row instead.
    if (
      recorded.kind === 'claim-lost' &&
      recorded.currentState !== null &&
      recorded.currentState !== 'sending'
    ) {
      showOrderMailState({ state: recorded.currentState });
    }
    return { kind: 'finished', result: claimLost(orderId, attempt, 'accepted', verdict.providerMessageId) };
  }

  const anotherAttemptFollows = !cancelRequested() && runAttempts + 1 < settings.maxSendAttempts;
  const { recorded, providerMessageId, sentNothing } = await recordNotAccepted(
    base,
    verdict.details,
    settings,
    {
      anotherAttemptFollows,
      delayMs: delayBeforeNextAttempt(settings, runAttempts + 1, verdict.details.retryAfterMs),
      sendKey: claim.idempotencyKey,
      cancelRequested,
      early,
    },
  );
  if (recorded.kind === 'claim-lost') {
    if (recorded.currentState !== null && recorded.currentState !== 'sending') {
      showOrderMailState({ state: recorded.currentState });
    }
    const result = claimLost(orderId, attempt, null, null);
    if (recorded.currentState === 'sending' && sentNothing) {
      return { kind: 'lost-while-held', result };
    }
    return { kind: 'finished', result };
  }
  showOrderMailState({
    state: stateShownFor(recorded.state, recorded.outcome),
    outcome: recorded.outcome,
    httpStatus: verdict.details.httpStatus,
  });
  if (recorded.state === 'sent') {
    return {
      kind: 'finished',
      result: {
        orderId,
        result: 'sent',
        outcome: recorded.outcome,
        attempts: attempt,
        // The provider's id where verification found the mail; none when the policy assumed it sent.
        providerMessageId,
      },
    };
  }
  return { kind: 'not-accepted', attempt, settings, verdict, recordedOutcome: recorded.outcome };
}

/**
 * The send, waited for to its real end: it is NEVER retried by Temporal (a retry after an unknown outcome
 * could send a second mail) and, running in the attempt's non-cancellable scope, never abandoned by a
 * cancel mid-request. Its options are the sender's (src/workflows/commands.ts).
 */
async function send(orderId: string, claim: Claimed): Promise<SendVerdict> {
  try {
    const accepted = await sender(claim.settings.sendTimeoutMs).sendOrderMail({
      orderId,
      claimToken: claim.claimToken,
      attempt: claim.attempt,
      idempotencyKey: claim.idempotencyKey,
    });
    return {
      kind: 'accepted',
      httpStatus: accepted.httpStatus,
      providerMessageId: accepted.providerMessageId,
    };
  } catch (error) {
    return verdictOfSendFailure(error);
  }
}

/** The claim, with a missing order turned into the workflow's own OrderNotFound failure. */
async function claimOrFail(orderId: string): Promise<ClaimResult> {
  try {
    // The workflow's clock: the server's time of this workflow task (src/db/orderMailClaim.ts).
    return await bookkeeping.claimOrderMail({ orderId, issuedAtMs: Date.now(), verifyOrphans: true });
  } catch (error) {
    // A local activity's failure reaches the workflow as the activity's own ApplicationFailure (seen with
    // SDK 1.24); a regular activity's would be wrapped in an ActivityFailure. Both mean the same here.
    const failure = error instanceof ActivityFailure ? error.cause : error;
    if (failure instanceof ApplicationFailure && failure.type === FailureType.OrderNotFound) {
      showNoClaim();
      throw ApplicationFailure.create({
        type: FailureType.OrderNotFound,
        message: failure.message,
        nonRetryable: true,
        cause: error instanceof Error ? error : undefined,
      });
    }
    throw error;
  }
}
