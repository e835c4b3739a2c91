// The mail workflow, read top to bottom in the order of its commands: the loop and its step table, one attempt
// (claim → send → record), then verification. The proxies and timers, with their options: commands.ts. Why it
// is built this way: docs/design.md §5 and §6 ("The mail workflow's sequence").
import { ActivityFailure, ApplicationFailure, CancellationScope, log, patched } from '@temporalio/workflow';
import type { ClaimResult } from '../activities';
import { FailureType } from '../shared/failures';
import type { LogOutcome, MailOutcome } from '../shared/mailOutcome';
import {
  describeSendOutcome,
  notAccepted,
  recordOfAnswer,
  SEND_HELD,
  sendOutcomeOfFailure,
  type SendAccepted,
  type SendNotAccepted,
  type SendClaimLost,
  type SendOutcome,
} from '../shared/sendOutcome';
import { decideUnknownOutcome, recordOfUnknown, type VerificationAnswer } from '../shared/unknownOutcome';
import { ownAttemptFacts, retryFollowing, type AttemptOnRecord } from '../shared/unknownOutcomeFacts';
import {
  afterAttempt,
  delayBeforeOrderLookAgain,
  msUntilNotFoundCounts,
  orderVisibleWaitOf,
  type OrderMailRunOptions,
} from '../shared/workflowSettings';
import type {
  AttemptRef,
  Claimed,
  OrderMailResult,
  OrphanToVerify,
  Recorded,
  Step,
  StepTable,
} from './attemptStep';
import {
  askProvider,
  bookkeeping,
  earlyAskOnProviderEvents,
  record,
  resumeOnSignal,
  sender,
  sleepOrEnd,
  type EarlyAsk,
  type HoldWait,
} from './commands';
import * as ending from './endings';
import { showNoClaim, showOrderMailState, showRow } from './showOrderMailState';

export type { OrderMailResult } from './attemptStep';
export { EXPLANATION_MEMO } from './endings';

// Patches: runs recorded before them took the older path (docs/design.md §6).
export const ORDER_NOT_VISIBLE_YET_WAITS = 'order-not-visible-yet-waits';
export const SEND_HOLD_WAITS = 'send-hold-waits';

// The loop's three retry counts (why each: docs/design.md §6, "The loop's retry counts").
/** Waits, 1 s each, after claims that found another run of this workflow id holding the row at the same time. */
export const SAME_TIME_WAITS = 2;
const SAME_TIME_WAIT_MS = 1_000;
/** Claims again after an attempt that sent nothing found the row held by another claim (after a Reset). */
export const RECLAIMS_AFTER_LOST_CLAIM = 3;
/** Orphans verified and settled in a row, each followed by a claim, before the run gives up. */
export const ORPHAN_SETTLEMENTS = 3;

/** What the loop knows across attempts; each count bounds its row of the table. */
interface Run {
  orderId: string;
  cancelRequested: () => boolean;
  early: EarlyAsk;
  hold: HoldWait;
  orderWaitMs: number;
  /** This run's attempts (maxSendAttempts counts these). */
  attempts: number;
  orderLooks: number;
  orderWaitedMs: number;
  sameTimeWaits: number;
  reclaims: number;
  orphansSettled: number;
  holdWaits: number;
}

/** Sends order `orderId`'s confirmation mail exactly once; the workflow id is the order id (docs/design.md §6). */
export async function orderConfirmationMail(
  orderIdInput: string,
  options?: OrderMailRunOptions,
): Promise<OrderMailResult> {
  const orderId = ending.validOrderIdOrFail(orderIdInput);
  // Cancellation requests reach this scope; each attempt runs shielded in a non-cancellable scope of its own.
  const scope = CancellationScope.current();
  const run: Run = {
    orderId,
    cancelRequested: () => scope.consideredCancelled,
    early: earlyAskOnProviderEvents(),
    hold: resumeOnSignal(),
    orderWaitMs: orderVisibleWaitOf(options),
    attempts: 0,
    orderLooks: 0,
    orderWaitedMs: 0,
    sameTimeWaits: 0,
    reclaims: 0,
    orphansSettled: 0,
    holdWaits: 0,
  };
  for (;;) {
    const ended = await CancellationScope.nonCancellable(() => oneAttempt(run));
    const step: Step =
      run.cancelRequested() && ended.kind !== 'cancelled' ? { kind: 'cancelled', left: ended } : ended;
    const next = await rowOf(step)(step, run);
    if (next !== AGAIN) return next;
  }
}

const AGAIN = 'claim-again';
type Next = OrderMailResult | typeof AGAIN;

/** What each way an attempt ended leads to: the run's result, a failure thrown, or AGAIN (claim again). */
export const AFTER_STEP = {
  finished: async (step) => step.result,
  cancelled: async (step, run) => {
    throw ending.cancelled(step.left.kind, run.orderId, step.left);
  },
  'order-not-visible': async (step, run) => {
    // Waited = the timers slept so far: the same on every replay.
    if (run.orderWaitedMs >= run.orderWaitMs) {
      const values = { notFound: step.failure.message, waitedMs: run.orderWaitedMs };
      throw ending.failed('order-never-visible', run.orderId, values, step.failure.cause);
    }
    run.orderLooks += 1;
    const delayMs = delayBeforeOrderLookAgain(run.orderLooks);
    const { orderId, orderLooks } = run;
    log.info('Order not visible yet; waiting before claiming again', { orderId, orderLooks, delayMs });
    await sleepOrEnd(delayMs, () => ending.cancelled('order-not-visible', orderId, {}));
    run.orderWaitedMs += delayMs;
    return AGAIN;
  },
  'held-at-same-time': async (step, run) => {
    if (run.sameTimeWaits >= SAME_TIME_WAITS) throw ending.failed('held-at-same-time', run.orderId, step);
    run.sameTimeWaits += 1;
    const when = 'before claiming again';
    await sleepOrEnd(SAME_TIME_WAIT_MS, () => ending.cancelled('waiting', run.orderId, { when }));
    return AGAIN;
  },
  'lost-while-held': async (step, run) => {
    if (run.reclaims >= RECLAIMS_AFTER_LOST_CLAIM) return step.result;
    run.reclaims += 1;
    log.info('Order mail claim held by another claim after an attempt that sent nothing; claiming again', {
      orderId: run.orderId,
      attempts: step.result.attempts,
    });
    return AGAIN;
  },
  'orphan-settled': async (_step, run) => {
    run.orphansSettled += 1;
    const settledInARow = run.orphansSettled;
    if (settledInARow > ORPHAN_SETTLEMENTS)
      throw ending.failed('orphans-kept-coming', run.orderId, { settledInARow });
    return AGAIN;
  },
  held: async (step, run) => {
    // No attempt of this run's: an operator's hold made the fence refuse it (docs/operating.md).
    log.info('Sends are held; waiting for the hold to be lifted', {
      orderId: run.orderId,
      attempt: step.attempt,
    });
    await run.hold.wait(run.holdWaits, () => ending.cancelled('held', run.orderId, step));
    run.holdWaits += 1;
    return AGAIN;
  },
  'not-accepted': async (step, run) => {
    run.attempts += 1;
    const { orderId, attempts } = run;
    const { sent } = step;
    const next = afterAttempt(step.settings, attempts, { ...sent, outcome: step.recordedOutcome });
    if (next.kind === 'permanent') throw ending.failed('permanent', orderId, step, step.cause);
    if (next.kind === 'gave-up') throw ending.failed('gave-up', orderId, { runAttempts: attempts, sent });
    const { delayMs } = next;
    log.info('Order mail not accepted; waiting before the next attempt', {
      orderId,
      attempt: step.attempt,
      delayMs,
      outcome: step.recordedOutcome,
    });
    const when = `after attempt ${step.attempt} (${describeSendOutcome(sent)})`;
    await sleepOrEnd(delayMs, () => ending.cancelled('waiting', orderId, { when }));
    return AGAIN;
  },
} satisfies StepTable<Step, Run, Next>;

/** The row of the step's own kind (TypeScript cannot correlate a union's kind with its row by itself). */
function rowOf<S extends Step>(step: S): (step: S, run: Run) => Promise<Next> {
  return AFTER_STEP[step.kind] as unknown as (step: S, run: Run) => Promise<Next>;
}

/** One attempt: claim, then send and record, or what the claim found instead. Runs non-cancellable. */
async function oneAttempt(run: Run): Promise<Step> {
  const { orderId } = run;
  const claim = await claimOrFail(orderId);
  switch (claim.kind) {
    case 'order-not-visible':
      return claim;
    case 'already-sent':
      log.info('Order mail was already sent; this run sends nothing', { orderId, outcome: claim.outcome });
      showRow('sent', claim.outcome, { attempts: claim.attempts });
      return { kind: 'finished', result: ending.alreadySent(orderId, claim.outcome, claim.attempts) };
    case 'held-elsewhere':
      if (claim.sameWorkflow) return { kind: 'held-at-same-time', holder: claim.holder };
      throw ending.failed('held-by-another-workflow', orderId, claim);
    case 'verify-orphan':
      return verifyOrphan(run, claim);
    case 'claimed':
      return sendAndRecord(run, claim);
    default: {
      // A kind this code does not know: a newer worker's answer.
      const what = `the claim answered ${JSON.stringify(claim satisfies never)}`;
      throw ending.failed('unexpected-answer', orderId, { what });
    }
  }
}

// Runs recorded before ORDER_NOT_VISIBLE_YET_WAITS failed OrderNotFound at once.
async function claimOrFail(
  orderId: string,
): Promise<ClaimResult | Extract<Step, { kind: 'order-not-visible' }>> {
  try {
    // The workflow's clock: the server's time of this workflow task, which orders the runs' claims.
    return await bookkeeping.claimOrderMail({ orderId, issuedAtMs: Date.now() });
  } catch (error) {
    // A local activity's failure arrives unwrapped (SDK 1.24), a regular one's in an ActivityFailure.
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

/** The claimed attempt: send through the dispatch fence unless cancelled meanwhile, then record. */
async function sendAndRecord(run: Run, claim: Claimed): Promise<Step> {
  const { orderId } = run;
  const { attempt, claimToken, settings } = claim;
  const base = { orderId, claimToken, attempt };
  showOrderMailState({ state: 'sending', outcome: null, attempts: attempt, httpStatus: null });
  if (run.cancelRequested()) {
    // Cancelled while claiming: nothing was dispatched, so the claim is released as not sent.
    const reason = 'no request was made: the workflow was cancelled before this attempt sent anything';
    await record(base, recordOfAnswer(notAccepted('not_sent', null, reason)), false);
    showOrderMailState({ state: 'failed', outcome: 'not_sent' });
    return { kind: 'cancelled', left: { kind: 'released', attempt } };
  }

  const { sent, failure } = await send(base, claim);
  // The fence refused: this attempt made no request.
  if (sent.outcome === 'claim-lost') return lostClaim(orderId, attempt, sent.row, sent, true);
  const { recorded, as } = await recordSendOutcome(run, base, sent, claim);
  // Recorded not_sent: no request was made, or the provider said (or was verified to say) it took nothing.
  if (recorded.kind === 'claim-lost')
    return lostClaim(orderId, attempt, recorded, sent, as.outcome === 'not_sent');
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
  showRow(recorded.state, recorded.outcome, { httpStatus: sent.httpStatus });
  if (recorded.state === 'sent' || sent.outcome === 'accepted') {
    // The provider's id: its answer, or what verification found; none when the policy assumed it sent.
    const result: OrderMailResult = {
      orderId,
      result: 'sent',
      outcome: recorded.outcome,
      attempts: attempt,
      providerMessageId: as.providerMessageId,
    };
    return { kind: 'finished', result };
  }
  return { kind: 'not-accepted', attempt, settings, sent, cause: failure, recordedOutcome: recorded.outcome };
}

/** Someone else settled the row while this attempt held it; an accepted mail's id went to its audit row. */
function lostClaim(
  orderId: string,
  attempt: number,
  row: { currentState: SendClaimLost['row']['currentState']; currentOutcome?: LogOutcome | null },
  sent: SendOutcome,
  sentNothing: boolean,
): Step {
  const { currentState, currentOutcome } = row;
  if (currentState !== null && currentState !== 'sending') showRow(currentState, currentOutcome);
  const result =
    sent.outcome === 'accepted'
      ? ending.claimLost(orderId, attempt, 'accepted', sent.providerMessageId)
      : ending.claimLost(orderId, attempt, currentOutcome ?? null, null);
  if (currentState === 'sending' && sentNothing) return { kind: 'lost-while-held', result };
  return { kind: 'finished', result };
}

/** The send, waited for to its real end (never retried, never given up on); its failure is kept as a cause. */
async function send(
  base: AttemptRef,
  claim: Claimed,
): Promise<{ sent: SendOutcome; failure?: ActivityFailure }> {
  try {
    const sent = await sender(claim.settings.sendTimeoutMs).sendOrderMail({
      ...base,
      idempotencyKey: claim.idempotencyKey,
    });
    return { sent };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { sent: sendOutcomeOfFailure(error), failure: error };
  }
}

/** The record's answer, and what the attempt was recorded as (the accepted mail's id where one is known). */
type Recording = { recorded: Recorded; as: { outcome: MailOutcome; providerMessageId: string | null } };

/**
 * Records the send's outcome; an unknown is decided by decideUnknownOutcome from the row's facts, after asking
 * the provider where it can be asked (docs/design.md §5).
 */
async function recordSendOutcome(
  run: Run,
  base: AttemptRef,
  sent: SendAccepted | SendNotAccepted,
  claim: Claimed,
): Promise<Recording> {
  if (sent.outcome !== 'unknown') {
    const answered = recordOfAnswer(sent);
    const recorded = await record(base, answered, null);
    const what = 'the record found the fence changed, though nothing was expected of it';
    if (recorded.kind === 'dispatch-changed')
      throw ending.failed('unexpected-answer', base.orderId, { what });
    return { recorded, as: answered };
  }
  const { settings } = claim;
  // Judged as the send came back, before any wait: whether a retry follows, and after how long.
  const after = retryFollowing(run.cancelRequested() ? null : afterAttempt(settings, run.attempts + 1, sent));
  const facts = (attempt: AttemptOnRecord, answer: VerificationAnswer | null) =>
    ownAttemptFacts({ attempt, settings, ...after, providerError: sent.errorCode, answer });
  // What the provider said, once asked: asked at most once per attempt.
  let answer: VerificationAnswer | null = null;
  // The fence moves at most once (not dispatched → dispatched), so the second decision stands.
  for (let decisions = 0; ; decisions++) {
    const attempt = await bookkeeping.readAttemptOutcomeFacts(base);
    let decision = decideUnknownOutcome(facts(attempt, answer));
    if (decision.kind === 'verify') {
      // Null (no request of its own): "not found" counts only after the whole send timeout.
      const ended = sent.requestEndedAfterFenceMs;
      const own = ended === null ? {} : { requestEndedWithinMs: ended };
      const verification = settings.verification!;
      const input = { ...base, sendKey: claim.idempotencyKey, ...own };
      answer = await askProvider(verification, input, run, verification.settleDelayMs);
      decision = decideUnknownOutcome({ ...facts(attempt, answer), verification: { answer } });
    }
    const decided = recordOfUnknown(decision, facts(attempt, answer), sent);
    const recorded = await record(base, decided, attempt.dispatched);
    if (recorded.kind !== 'dispatch-changed') return { recorded, as: decided };
    const what = 'the dispatch fence changed twice for one attempt';
    if (decisions >= 1) throw ending.failed('unexpected-answer', base.orderId, { what });
  }
}

/**
 * A dispatched orphan, handed back by the claim: asked about like this run's own unknowns and
 * settled with the answer, rather than by the policy; then the run claims again (docs/design.md §7).
 */
async function verifyOrphan(run: Run, orphan: OrphanToVerify): Promise<Step> {
  const { orderId } = run;
  const verification = orphan.settings.verification;
  const what = 'the claim handed back an orphan with no verification';
  if (verification === null) throw ending.failed('unexpected-answer', orderId, { what });
  // Nobody waited for the orphan's send: it may have lasted until its send timeout.
  const requestMayLastMs = orphan.settings.sendTimeoutMs;
  const waitMs = msUntilNotFoundCounts(orphan.sinceDispatchMs, requestMayLastMs, verification.settleDelayMs);
  const { holder: claimToken, attempt, sendKey } = orphan;
  const input = { orderId, claimToken, attempt, sendKey, requestMayLastMs };
  const answer = await askProvider(verification, input, run, waitMs);
  if (run.cancelRequested() && answer.kind === 'inconclusive') {
    // Cancelled before the provider was asked: the orphan stays, for the sweep to ask about.
    return { kind: 'cancelled', left: { kind: 'orphan-left', attempt } };
  }
  const settled = await bookkeeping.settleVerifiedOrphanAttempt({
    orderId,
    holder: claimToken,
    attempt,
    answer,
    policy: orphan.settings.unknownOutcomePolicy,
    issuedAtMs: Date.now(),
  });
  return { kind: 'orphan-settled', attempt, settledAs: settled.kind === 'settled' ? settled.decision : null };
}
