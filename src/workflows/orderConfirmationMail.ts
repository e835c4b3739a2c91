import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  condition,
  defineSignal,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  upsertMemo,
} from '@temporalio/workflow';
import type { ClaimResult, OrderMailActivities } from '../activities';
import { FailureType, type SendFailureDetails } from '../shared/failures';
import type { LogOutcome, MailOutcome } from '../shared/mailOutcome';
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';
import { PROVIDER_EVENT_SIGNAL } from '../shared/workflowContract';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type UnknownOutcomeDecision,
  type UnknownOutcomeFacts,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import {
  delayBeforeNextAttempt,
  type OrderMailWorkflowSettings,
  type VerificationSettings,
} from '../shared/workflowSettings';
import { askProvider, type EarlyAsk } from './askProvider';
import { verdictOfSendFailure, type SendVerdict } from './sendVerdict';
import { showNoClaim, showOrderMailState, stateShownFor } from './showOrderMailState';

// Claim, record and the read of an attempt's facts are idempotent (fenced by the claim token and attempt), so
// Temporal retries them as long as Postgres takes to answer; 30 s covers the pool's statement (10 s) and
// client (15 s) deadlines. They run as LOCAL activities: two fewer activity tasks and workflow tasks per
// order on the server (docs/benchmarks.md). Safe because a local activity that runs again on a
// workflow-task retry is just a retried claim or record, both fenced. Backoffs from 10 s on wait on a durable
// timer instead of holding the workflow task open during a long Postgres outage.
const bookkeeping = proxyLocalActivities<OrderMailActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    // Retrying cannot make a missing order appear.
    nonRetryableErrorTypes: [FailureType.OrderNotFound],
  },
  localRetryThreshold: '10 seconds',
});

// A claim that finds the row last claimed by another run of this workflow id at the very same time (equal
// workflow-task times order nothing: src/db/orderMailClaim.ts) waits and claims again, with a later time.
const SAME_TIME_CLAIM_WAIT_MS = 1_000;
const SAME_TIME_CLAIM_TRIES = 3;

// An attempt of this run that sent nothing can find the row held by another claim: after a Reset, the new run
// replays to the reset point and may redo a step of an attempt the closed run had moved past (it claimed its
// next attempt, then the reset terminated it). v1.0.0 ended such a run 'claim-lost', Completed, and the
// closed run's claim was later released by the sweep with nobody left to send. Since this patch the run
// claims again: the claim takes the closed run's attempt over (or refuses another workflow's), so the mail
// is still owed by an open run. Only after a request-less or definitely-not-sent attempt, and only while the
// row is held ('sending'): a row settled by someone else (an operator's resolve) still ends the run.
const CLAIM_AGAIN_AFTER_LOST_PATCH = 'claim-again-after-claim-lost';
const LOST_CLAIM_TRIES = 3;

// A claim that finds a closed run's dispatched attempt, with a provider that can be asked, hands it back
// ('verify-orphan'); this run asks, settles it with the answer, and claims again. Each such settlement ends
// one attempt for good, so more than a few in a row means the row keeps changing under us.
const ORPHAN_VERIFY_TRIES = 3;

// A provider webhook event of the send in flight (PROVIDER_EVENT_SIGNAL, sent by the workers:
// src/verification/earlyLookups.ts) ends the verification's wait early: the lookup is asked now, and its answer
// judged as ever, so an event settles nothing alone. A run acts on it only under this patch: a history in which
// an older build got the signal and ignored it replays as it ran. At most this many early asks per run.
const EARLY_LOOKUP_PATCH = 'early-lookup-on-provider-event';
const MAX_EARLY_ASKS = 3;
const providerEventSignal = defineSignal(PROVIDER_EVENT_SIGNAL);

/** The memo key under which a cancelled run says what it did (a cancelled run carries no result). */
export const EXPLANATION_MEMO = 'orderMailExplanation';

export interface OrderMailResult {
  orderId: string;
  /** 'sent': this run settled the mail as sent. 'already-sent': an earlier run had. 'claim-lost': someone
   * else (an operator's resolve) settled the row while this run held it, so it stopped without recording. */
  result: 'sent' | 'already-sent' | 'claim-lost';
  outcome: LogOutcome | null;
  /** The log row's attempt number this run ended on (attempts of the order, all runs). */
  attempts: number;
  /** The provider's id of the accepted mail, also when the claim was lost before it could be recorded. */
  providerMessageId: string | null;
  /** Why this run sent nothing, in words an operator reads in the Web UI's result panel. */
  explanation?: string;
}

type Claimed = Extract<ClaimResult, { kind: 'claimed' }>;
type OrphanToVerify = Extract<ClaimResult, { kind: 'verify-orphan' }>;
type Recorded = Exclude<
  Awaited<ReturnType<OrderMailActivities['recordOrderMailOutcome']>>,
  { kind: 'dispatch-changed' }
>;

/** How one attempt (claim → send → record) ended, for the loop to act on. */
type Step =
  | { kind: 'finished'; result: OrderMailResult }
  | { kind: 'held-at-same-time'; holder: string }
  /** Cancelled between claim and send: the claim was released, nothing was sent. */
  | { kind: 'released'; attempt: number }
  /** This attempt sent nothing, and another claim holds the row: claim again (v1.0.0: `result` ended it). */
  | { kind: 'lost-while-held'; result: OrderMailResult }
  /** A closed run's dispatched attempt was verified and settled (null: someone else settled it): claim again. */
  | { kind: 'orphan-settled'; attempt: number; settledAs: string | null }
  /** Cancelled while waiting to ask about a closed run's attempt: left as it was, for the sweep to ask. */
  | { kind: 'orphan-left'; attempt: number }
  | {
      kind: 'not-accepted';
      attempt: number;
      settings: OrderMailWorkflowSettings;
      verdict: Extract<SendVerdict, { kind: 'not-accepted' }>;
      recordedOutcome: MailOutcome;
    };

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
 */
export async function orderConfirmationMail(orderIdInput: string): Promise<OrderMailResult> {
  const orderId = validOrderIdOrFail(orderIdInput);
  // Cancellation requests reach this scope; the attempts run in non-cancellable scopes of their own.
  const run = CancellationScope.current();
  const cancelRequested = (): boolean => run.consideredCancelled;
  let runAttempts = 0;
  let sameTimeTries = 0;
  let lostClaimTries = 0;
  let orphanTries = 0;
  const early = earlyAskOnProviderEvents();

  for (;;) {
    const step = await CancellationScope.nonCancellable(() =>
      oneAttempt(orderId, runAttempts, cancelRequested, early),
    );
    if (step.kind === 'released' || step.kind === 'not-accepted') runAttempts += 1;
    if (cancelRequested()) throw cancelledAfter(orderId, step);

    switch (step.kind) {
      case 'finished':
        return step.result;
      case 'released':
        throw new Error('unreachable: a claim is released only when the run is cancelled');
      case 'held-at-same-time':
        sameTimeTries += 1;
        if (sameTimeTries >= SAME_TIME_CLAIM_TRIES) {
          showNoClaim();
          throw ApplicationFailure.create({
            type: FailureType.ClaimHeldElsewhere,
            message:
              `Order ${orderId}: the mail's row was claimed by another run of this workflow (${step.holder}) at ` +
              'a time this run cannot tell apart from its own; this run sends nothing. If that run is closed, ' +
              'the reconciliation sweep settles its claim; then retry: npm run ops -- retry.',
            nonRetryable: true,
          });
        }
        await waitOrEndCancelled(orderId, SAME_TIME_CLAIM_WAIT_MS, 'before claiming again');
        continue;
      case 'lost-while-held':
        if (!patched(CLAIM_AGAIN_AFTER_LOST_PATCH) || lostClaimTries >= LOST_CLAIM_TRIES) return step.result;
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
        throw new Error('unreachable: an orphan is left only when the run is cancelled');
      case 'orphan-settled':
        orphanTries += 1;
        if (orphanTries > ORPHAN_VERIFY_TRIES) {
          throw ApplicationFailure.create({
            type: FailureType.ClaimHeldElsewhere,
            message:
              `Order ${orderId}: ${orphanTries} attempts of closed runs were settled in a row and the row was ` +
              'still not free to claim; this run sends nothing. See npm run ops -- status, then retry.',
            nonRetryable: true,
          });
        }
        continue;
      case 'not-accepted':
        await afterNotAccepted(orderId, step, runAttempts);
    }
  }
}

/** One attempt of this run: claim, then (unless cancelled meanwhile) send and record. Non-cancellable. */
async function oneAttempt(
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
    showNoClaim();
    throw ApplicationFailure.create({
      type: FailureType.ClaimHeldElsewhere,
      message: `Order ${orderId}: the mail is being sent by another workflow (${claim.holder}); this run sends nothing.`,
      nonRetryable: true,
    });
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
 * cancel mid-request. Its timeout comes from the worker's configuration, above the transport's own deadline.
 */
async function send(orderId: string, claim: Claimed): Promise<SendVerdict> {
  const sender = proxyActivities<OrderMailActivities>({
    startToCloseTimeout: claim.settings.sendTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
  try {
    const accepted = await sender.sendOrderMail({
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

/**
 * Records a send that was not accepted. Rejected and not-sent are recorded as they are; an unknown outcome is
 * decided by decideUnknownOutcome from the row's facts (did the attempt pass the dispatch fence, how old is
 * the idempotency key), and recorded as decided. Where the provider can be asked (settings.verification), the
 * decision first says "verify": wait the settle delay, ask, and decide again with the answer. Should a stalled
 * send pass the fence in between, the record changes nothing and the decision is made again.
 */
async function recordNotAccepted(
  base: { orderId: string; claimToken: string; attempt: number },
  details: SendFailureDetails,
  settings: OrderMailWorkflowSettings,
  next: {
    anotherAttemptFollows: boolean;
    delayMs: number;
    sendKey: string;
    cancelRequested: () => boolean;
    early: EarlyAsk;
  },
): Promise<{ recorded: Recorded; providerMessageId: string | null; sentNothing: boolean }> {
  const common = { ...base, httpStatus: details.httpStatus };
  if (details.outcome !== 'unknown') {
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...common,
      state: 'failed',
      outcome: details.outcome,
      unknownPolicy: null,
      providerMessageId: null,
      error: details.reason,
      expectDispatched: null,
    });
    if (recorded.kind === 'dispatch-changed')
      throw new Error('unreachable: nothing was expected of the fence');
    return { recorded, providerMessageId: null, sentNothing: details.outcome === 'not_sent' };
  }
  // What the provider said, once asked: asked at most once per attempt.
  let answer: VerificationAnswer | null = null;
  // The fence moves at most once (not dispatched → dispatched), so the second decision stands.
  for (let decided = 0; ; decided++) {
    const attemptFacts = await bookkeeping.readAttemptOutcomeFacts(base);
    const facts: UnknownOutcomeFacts = {
      dispatched: attemptFacts.dispatched,
      policy: settings.unknownOutcomePolicy,
      idempotency: settings.idempotency,
      sinceKeyFirstDispatchMs: attemptFacts.sinceKeyFirstDispatchMs,
      delayBeforeRetryMs: next.delayMs,
      sendTimeoutMs: settings.sendTimeoutMs,
      anotherAttemptFollows: next.anotherAttemptFollows,
      providerError: details.errorCode,
      ...(settings.verification === null ? {} : { verification: { answer } }),
    };
    let step = decideUnknownOutcome(facts);
    if (step.kind === 'verify') {
      answer = await verifyWithProvider(
        base,
        next.sendKey,
        settings.verification!,
        next.cancelRequested,
        next.early,
        {
          // This execution saw its request end: "not found" may count that long after the dispatch, plus the
          // settle delay. Absent (ALREADY_DISPATCHED, a timed-out send): only after the attempt's send timeout.
          ...(details.requestEndedAfterFenceMs === undefined
            ? {}
            : { requestEndedWithinMs: details.requestEndedAfterFenceMs }),
        },
      );
      facts.verification = { answer };
      step = decideUnknownOutcome(facts);
      if (step.kind === 'verify') throw new Error('unreachable: verification answered, yet asked again');
    }
    const decision: UnknownOutcomeDecision = step;
    const described = describeUnknownDecision(decision, facts);
    const providerMessageId = decision.kind === 'verified-accepted' ? decision.providerMessageId : null;
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...common,
      state: decision.state,
      outcome: decision.outcome,
      unknownPolicy: decision.unknownPolicy,
      verification: decision.verification ?? null,
      providerMessageId,
      error:
        decision.kind === 'not-sent' ? `${described} (${details.reason})` : `${details.reason}; ${described}`,
      expectDispatched: attemptFacts.dispatched,
    });
    // Not sent: the request never left (the fence was not passed), or the provider said it has no such mail.
    const sentNothing = decision.outcome === 'not_sent';
    if (recorded.kind !== 'dispatch-changed') return { recorded, providerMessageId, sentNothing };
    if (decided >= 1) throw new Error('unreachable: the dispatch fence changed twice for one attempt');
  }
}

/**
 * Waits the provider's settle delay on a durable timer (until then its log may not show the send, so "not
 * found" would mean nothing), then asks it with the verify activity, retried until the verification
 * deadline. A cancel during the wait, or a lookup that keeps failing past its deadline, leaves it
 * inconclusive, and the policy decides.
 */
async function verifyWithProvider(
  base: { orderId: string; claimToken: string; attempt: number },
  sendKey: string,
  verification: VerificationSettings,
  cancelRequested: () => boolean,
  early: EarlyAsk,
  /**
   * The run's own send: how long after the fence its request was seen to end, where it was. A closed run's
   * attempt (verifyOrphan): how long to wait, and how long its request may have lasted.
   */
  own: { requestEndedWithinMs?: number },
  orphan?: { waitMs: number; requestMayLastMs: number },
): Promise<VerificationAnswer> {
  log.info('Order mail outcome unknown; waiting the settle delay before asking the provider', {
    orderId: base.orderId,
    attempt: base.attempt,
    settleDelayMs: verification.settleDelayMs,
    ...(orphan === undefined ? {} : { waitMs: orphan.waitMs }),
  });
  // The run's own attempt waits exactly as recorded runs did (a timer of the settle delay, even when the
  // cancel came first): a different command here would not replay. A closed run's attempt may need no wait.
  // A provider event of the send ends the wait early (EarlyAsk): the lookup is asked now.
  const wake = (): boolean => cancelRequested() || early.requested();
  const woke =
    orphan === undefined
      ? await condition(wake, verification.settleDelayMs)
      : cancelRequested() || (orphan.waitMs > 0 && (await condition(wake, orphan.waitMs)));
  if (woke && cancelRequested()) {
    return { kind: 'inconclusive', reason: 'the run was cancelled before the settle delay had passed' };
  }
  if (woke) {
    early.taken();
    log.info('A provider event of this send arrived; asking the provider now', {
      orderId: base.orderId,
      attempt: base.attempt,
    });
  }
  return askProvider(
    verification,
    {
      ...base,
      sendKey,
      ...own,
      ...(orphan === undefined ? {} : { requestMayLastMs: orphan.requestMayLastMs }),
    },
    { cancelRequested, early },
  );
}

/**
 * A closed run (reset or terminated) dispatched an attempt and never recorded it. Rather than settle it by
 * the policy (which may leave the customer without a mail, or send a second one), ask the provider, as for
 * this run's own unknown sends: wait until its send timeout and the settle delay have passed since that
 * dispatch (nobody saw its request end), look the send up by its key, and settle the attempt with the answer. The claim then sends, or finds the mail sent.
 */
async function verifyOrphan(
  orderId: string,
  orphan: OrphanToVerify,
  cancelRequested: () => boolean,
  early: EarlyAsk,
): Promise<Step> {
  const verification = orphan.settings.verification;
  if (verification === null) throw new Error('unreachable: the claim hands back an orphan only to verify it');
  // Nobody waited for the closed run's send: its request may have been under way until its send timeout, and
  // the provider's log is trusted only the settle delay after that.
  const requestMayLastMs = orphan.settings.sendTimeoutMs;
  const waitMs = Math.max(0, requestMayLastMs + verification.settleDelayMs - orphan.sinceDispatchMs);
  const answer = await verifyWithProvider(
    { orderId, claimToken: orphan.holder, attempt: orphan.attempt },
    orphan.sendKey,
    verification,
    cancelRequested,
    early,
    {},
    { waitMs, requestMayLastMs },
  );
  if (cancelRequested() && answer.kind === 'inconclusive') {
    // Cancelled before the provider was asked: settling now would record the policy as if asking had failed.
    // The row stays the closed run's, and the reconciliation sweep asks about it (docs/design.md §7).
    return { kind: 'orphan-left', attempt: orphan.attempt };
  }
  const settled = await bookkeeping.settleVerifiedOrphanAttempt({
    orderId,
    holder: orphan.holder,
    attempt: orphan.attempt,
    answer,
    policy: orphan.settings.unknownOutcomePolicy,
    issuedAtMs: Date.now(),
  });
  return {
    kind: 'orphan-settled',
    attempt: orphan.attempt,
    settledAs: settled.kind === 'settled' ? settled.decision : null,
  };
}

/**
 * Listens for PROVIDER_EVENT_SIGNAL. An event asks for an early lookup only under EARLY_LOOKUP_PATCH, checked
 * the moment a wait would end for it (so a history where an older build got the signal and went on waiting
 * replays as it ran), and at most MAX_EARLY_ASKS times per run.
 */
function earlyAskOnProviderEvents(): EarlyAsk {
  let eventSeen = false;
  let asked = 0;
  setHandler(providerEventSignal, () => {
    eventSeen = true;
  });
  return {
    requested: () => eventSeen && asked < MAX_EARLY_ASKS && patched(EARLY_LOOKUP_PATCH),
    taken: () => {
      eventSeen = false;
      asked += 1;
    },
  };
}

/** After an attempt was recorded as failed: fail for good, give up, or wait and claim again. */
async function afterNotAccepted(
  orderId: string,
  step: Extract<Step, { kind: 'not-accepted' }>,
  runAttempts: number,
): Promise<void> {
  const { verdict, settings } = step;
  const { details } = verdict;
  if (step.recordedOutcome === 'rejected' || !details.retryable) {
    throw permanentFailure(orderId, step.recordedOutcome, verdict);
  }
  if (runAttempts >= settings.maxSendAttempts) {
    throw ApplicationFailure.create({
      type: FailureType.MailNotSentGaveUp,
      message:
        `Order ${orderId}: the confirmation mail was not sent after ${runAttempts} attempts of this run ` +
        `(last: ${describeDetails(details)}). Fix the cause, then reset this workflow to try again.`,
      nonRetryable: true,
      details: [details],
    });
  }
  const delayMs = delayBeforeNextAttempt(settings, runAttempts, details.retryAfterMs);
  log.info('Order mail not accepted; waiting before the next attempt', {
    orderId,
    attempt: step.attempt,
    delayMs,
    outcome: step.recordedOutcome,
  });
  await waitOrEndCancelled(orderId, delayMs, `after attempt ${step.attempt} (${describeDetails(details)})`);
}

/** A durable wait; a cancel during it ends the run Cancelled (the row is already settled). */
async function waitOrEndCancelled(orderId: string, delayMs: number, when: string): Promise<void> {
  try {
    await sleep(delayMs);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    throw endCancelled(
      `Order ${orderId}: cancelled while waiting to claim again ${when}. Nothing is in flight: the log row ` +
        'is settled as failed, and a reset or npm run ops -- retry sends the mail.',
    );
  }
}

/** What a cancel that arrived during an attempt leaves behind, said on the way out. */
function cancelledAfter(orderId: string, step: Step): CancelledFailure {
  switch (step.kind) {
    case 'released':
      return endCancelled(
        `Order ${orderId}: cancelled while claiming. No request was made; attempt ${step.attempt} is recorded as ` +
          'failed/not_sent, and a reset or npm run ops -- retry sends the mail.',
      );
    case 'finished': {
      const { result } = step;
      const what =
        result.result === 'sent'
          ? `the mail had already been dispatched, was waited for and recorded as sent (outcome ${result.outcome}` +
            `${result.providerMessageId === null ? '' : `, message id ${result.providerMessageId}`})`
          : result.result === 'already-sent'
            ? 'the mail was already recorded as sent, and this run sent nothing'
            : 'the log row had been settled by someone else, and this run recorded nothing';
      return endCancelled(`Order ${orderId}: cancelled during attempt ${result.attempts}; ${what}.`);
    }
    case 'lost-while-held':
      return endCancelled(
        `Order ${orderId}: cancelled after attempt ${step.result.attempts}, which sent nothing, found the row held ` +
          "by another claim (a closed run's, after a reset). The sweep settles that claim; then a reset or " +
          'npm run ops -- retry sends the mail.',
      );
    case 'orphan-settled':
      return endCancelled(
        `Order ${orderId}: cancelled while settling attempt ${step.attempt}, which a closed run had sent and ` +
          `never recorded (${step.settledAs ?? 'settled by someone else meanwhile'}). This run sent nothing; ` +
          'npm run ops -- status shows the row, and a reset or npm run ops -- retry sends the mail if it is owed.',
      );
    case 'orphan-left':
      return endCancelled(
        `Order ${orderId}: cancelled while waiting to ask the provider about attempt ${step.attempt}, which a ` +
          'closed run had sent and never recorded. This run sent nothing and left that attempt as it was: the ' +
          'reconciliation sweep asks the provider and settles it; npm run ops -- status shows the row.',
      );
    case 'held-at-same-time':
      showNoClaim();
      return endCancelled(
        `Order ${orderId}: cancelled; the row is held by ${step.holder}, and this run sent nothing.`,
      );
    case 'not-accepted':
      return endCancelled(
        `Order ${orderId}: cancelled during attempt ${step.attempt}, which was waited for and recorded as ` +
          `failed/${step.recordedOutcome} (${describeDetails(step.verdict.details)}). Nothing is in flight; a reset ` +
          'or npm run ops -- retry sends the mail.',
      );
  }
}

/**
 * Ends the run Cancelled. The TypeScript SDK (1.24) sends the cancellation with no details, so a cancelled run
 * has no result or failure text of its own: the explanation goes into the run's memo, which the Web UI shows
 * and `describe()` returns, and into the CancelledFailure for the workflow's own log.
 */
function endCancelled(explanation: string): CancelledFailure {
  upsertMemo({ [EXPLANATION_MEMO]: explanation });
  log.info('Order mail workflow cancelled', { explanation });
  return new CancelledFailure(explanation);
}

function claimLost(
  orderId: string,
  attempt: number,
  outcome: LogOutcome | null,
  providerMessageId: string | null,
): OrderMailResult {
  const accepted =
    providerMessageId === null
      ? ''
      : ` The provider had accepted this run's mail (message id ${providerMessageId}); that answer is kept in the ` +
        "attempt's audit row.";
  return {
    orderId,
    result: 'claim-lost',
    outcome,
    attempts: attempt,
    providerMessageId,
    explanation:
      `Order ${orderId}: the mail's log row was settled by someone else (an operator's resolve) while this run ` +
      `held it, so this run did not change it.${accepted} The log row, its attempts and its operator acts say what happened.`,
  };
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

function validOrderIdOrFail(input: unknown): string {
  try {
    return parseOrderId(input);
  } catch (error) {
    if (error instanceof InvalidOrderIdError) {
      throw ApplicationFailure.create({
        type: FailureType.InvalidOrderId,
        message: error.message,
        nonRetryable: true,
      });
    }
    throw error;
  }
}

function permanentFailure(
  orderId: string,
  outcome: MailOutcome,
  verdict: Extract<SendVerdict, { kind: 'not-accepted' }>,
): ApplicationFailure {
  // The workflow fails with the send's own type (MailRejected, OrderNotFound), so the UI and callers see it
  // first, with the activity's failure as its cause.
  const what =
    verdict.failureType === FailureType.MailRefused
      ? 'the confirmation mail was refused before sending'
      : outcome === 'rejected'
        ? 'the mail API rejected the confirmation mail'
        : 'the confirmation mail cannot be sent';
  return ApplicationFailure.create({
    type: verdict.failureType,
    message: `Order ${orderId}: ${what} (${describeDetails(verdict.details)}). Fix the cause, then reset this workflow to send again.`,
    nonRetryable: true,
    details: [verdict.details],
    cause: verdict.cause,
  });
}

function describeDetails(details: SendFailureDetails): string {
  // Reasons from an HTTP answer already start with "HTTP <status>"; others name their status if they have one.
  const hasStatus = details.httpStatus === null || details.reason.startsWith(`HTTP ${details.httpStatus}`);
  return hasStatus ? details.reason : `HTTP ${details.httpStatus}: ${details.reason}`;
}
