import { CancellationScope, log } from '@temporalio/workflow';
import {
  delayBeforeNextAttempt,
  delayBeforeOrderLookAgain,
  orderVisibleWaitOf,
  type OrderMailRunOptions,
} from '../shared/workflowSettings';
import { oneAttempt } from './attempt';
import type { OrderMailResult, Step } from './attemptStep';
import {
  cancelledAfter,
  closedRunsKeptComingFailure,
  gaveUpFailure,
  heldAtSameTimeFailure,
  orderNeverVisibleFailure,
  permanentFailure,
  validOrderIdOrFail,
  waitForOrderOrEndCancelled,
  waitOrEndCancelled,
} from './endings';
import { describeSendOutcome } from '../shared/sendOutcome';
import { earlyAskOnProviderEvents } from './verificationWaits';
import { resumeOnSignal } from './holdWait';

export type { OrderMailResult } from './attemptStep';
export { EXPLANATION_MEMO } from './endings';

// A claim that finds the row last claimed by another run of this workflow id at the very same time (equal
// workflow-task times order nothing: src/db/orderMailClaim.ts) waits and claims again, with a later time.
const SAME_TIME_CLAIM_WAIT_MS = 1_000;
const SAME_TIME_CLAIM_TRIES = 3;

// An attempt of this run that sent nothing can find the row held by another claim: after a Reset, the new run
// replays to the reset point and may redo a step of an attempt the closed run had moved past (it claimed its
// next attempt, then the reset terminated it). Ending 'claim-lost' there would leave the closed run's claim to
// the sweep, with nobody left to send; so the run claims again: the claim takes the closed run's attempt over
// (or refuses another workflow's), and the mail is still owed by an open run. Only after a request-less or
// definitely-not-sent attempt, and only while the row is held ('sending'): a row settled by someone else (an
// operator's resolve) ends the run.
const LOST_CLAIM_TRIES = 3;

// A claim that finds a closed run's dispatched attempt, with a provider that can be asked, hands it back
// ('verify-orphan'); this run asks, settles it with the answer, and claims again. Each such settlement ends
// one attempt for good, so more than a few in a row means the row keeps changing under us.
const ORPHAN_VERIFY_TRIES = 3;

/**
 * Sends order `orderId`'s confirmation mail exactly once. The workflow id is the order id.
 * claim (retried) → send (never retried) → branch here on the outcome → record (retried); a definitely
 * not-sent failure waits with a durable backoff and claims again, up to the configured number of attempts of
 * this run. So does an unknown outcome from a provider that dedupes by idempotency key, while its window
 * lasts: the next attempt carries the same key, so it cannot make a second mail.
 *
 * A cancel never leaves this run's own attempt 'sending' (one it waits to ask about for a closed run stays as
 * that run left it, for the sweep): each attempt runs shielded from it (a cancel during the claim
 * releases the claim, a dispatched send is waited for and recorded truthfully, a record completes), and the
 * run then ends Cancelled with an explanation in its memo. During the backoff the row is already settled.
 *
 * A claim that finds no order (the order service started the mail a moment before its commit was visible)
 * waits on a durable timer and claims again, up to the bound (`options.orderVisibleWaitMs`, by default
 * ORDER_VISIBLE_WAIT_MS); an order still missing then fails the run OrderNotFound.
 */
export async function orderConfirmationMail(
  orderIdInput: string,
  options?: OrderMailRunOptions,
): Promise<OrderMailResult> {
  const orderId = validOrderIdOrFail(orderIdInput);
  const orderWaitMs = orderVisibleWaitOf(options);
  let orderLooks = 0;
  let orderWaitedMs = 0;
  // Cancellation requests reach this scope; the attempts run in non-cancellable scopes of their own.
  const run = CancellationScope.current();
  const cancelRequested = (): boolean => run.consideredCancelled;
  let runAttempts = 0;
  let sameTimeTries = 0;
  let lostClaimTries = 0;
  let orphanTries = 0;
  const early = earlyAskOnProviderEvents();
  const hold = resumeOnSignal();
  let holdWaits = 0;

  for (;;) {
    const step = await CancellationScope.nonCancellable(() =>
      oneAttempt(orderId, runAttempts, cancelRequested, early),
    );
    if (step.kind === 'released' || step.kind === 'not-accepted') runAttempts += 1;
    if (cancelRequested()) throw cancelledAfter(orderId, step);

    // What each way an attempt ended leads to: finish, fail, or claim again (with its limit).
    switch (step.kind) {
      case 'finished':
        return step.result;
      case 'released':
        // Only a cancelled run releases its claim (ended just above): not an error, a Cancelled ending.
        throw cancelledAfter(orderId, step);
      case 'order-not-visible': {
        // Waited = the timers slept so far: the same on every replay, and within a claim's time of the clock's.
        if (orderWaitedMs >= orderWaitMs)
          throw orderNeverVisibleFailure(orderId, step.failure, orderWaitedMs);
        orderLooks += 1;
        const delayMs = delayBeforeOrderLookAgain(orderLooks);
        log.info('Order not visible yet; waiting before claiming again', { orderId, orderLooks, delayMs });
        await waitForOrderOrEndCancelled(orderId, delayMs);
        orderWaitedMs += delayMs;
        continue;
      }
      case 'held-at-same-time':
        sameTimeTries += 1;
        if (sameTimeTries >= SAME_TIME_CLAIM_TRIES) throw heldAtSameTimeFailure(orderId, step.holder);
        await waitOrEndCancelled(orderId, SAME_TIME_CLAIM_WAIT_MS, 'before claiming again');
        continue;
      case 'lost-while-held':
        if (lostClaimTries >= LOST_CLAIM_TRIES) return step.result;
        lostClaimTries += 1;
        log.info(
          'Order mail claim held by another claim after an attempt that sent nothing; claiming again',
          {
            orderId,
            attempts: step.result.attempts,
          },
        );
        continue;
      case 'orphan-left':
        // Only a cancelled run leaves an orphan (ended just above).
        throw cancelledAfter(orderId, step);
      case 'orphan-settled':
        orphanTries += 1;
        if (orphanTries > ORPHAN_VERIFY_TRIES) throw closedRunsKeptComingFailure(orderId, orphanTries);
        continue;
      case 'held':
        // Not an attempt of this run's: an operator's hold made the fence refuse it (src/workflows/holdWait.ts).
        log.info('Sends are held; waiting for the hold to be lifted', { orderId, attempt: step.attempt });
        await hold.wait(orderId, holdWaits);
        holdWaits += 1;
        continue;
      case 'not-accepted':
        await afterNotAccepted(orderId, step, runAttempts);
    }
  }
}

/** After an attempt was recorded as failed: fail for good, give up, or wait and claim again. */
async function afterNotAccepted(
  orderId: string,
  step: Extract<Step, { kind: 'not-accepted' }>,
  runAttempts: number,
): Promise<void> {
  const { sent, settings } = step;
  if (step.recordedOutcome === 'rejected' || !sent.retryable) throw permanentFailure(orderId, step);
  if (runAttempts >= settings.maxSendAttempts) throw gaveUpFailure(orderId, runAttempts, sent);
  const delayMs = delayBeforeNextAttempt(settings, runAttempts, sent.retryAfterMs);
  log.info('Order mail not accepted; waiting before the next attempt', {
    orderId,
    attempt: step.attempt,
    delayMs,
    outcome: step.recordedOutcome,
  });
  await waitOrEndCancelled(orderId, delayMs, `after attempt ${step.attempt} (${describeSendOutcome(sent)})`);
}
