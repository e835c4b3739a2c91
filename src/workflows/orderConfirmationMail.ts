// The mail workflow in the order of its commands: the loop and its step table, one attempt (claim → send →
// record), then verification; the proxies and timers: commands.ts. Why: docs/design.md §5, §6 (its sequence).
import { ActivityFailure, ApplicationFailure, CancellationScope, log, patched } from '@temporalio/workflow';
import type { ClaimResult } from '../activities';
import { FailureType } from '../shared/failures';
import type { LogOutcome } from '../shared/mailOutcome';
import {
  describeSendOutcome,
  notAccepted,
  recordOfAnswer,
  SEND_HELD,
  type SendAccepted,
  type SendNotAccepted,
  type SendClaimLost,
  type SendOutcome,
} from '../shared/sendOutcome';
import { decideUnknownOutcome, recordOfUnknown, type VerificationAnswer } from '../shared/unknownOutcome';
import { ownAttemptFacts, retryFollowing, type AttemptOnRecord } from '../shared/unknownOutcomeFacts';
import {
  afterAttempt,
  delayBeforeHoldRecheck,
  delayBeforeOrderLookAgain,
  firstHoldRecheckOf,
  msUntilNotFoundCounts,
  orderVisibleWaitOf,
  type OrderMailRunOptions,
} from '../shared/workflowSettings';
import type { Claimed, OrderMailResult, OrphanToVerify, Step, StepTable, Wait } from './attemptStep';
import { askProvider, bookkeeping, listenForEarlyAsks, record, send, waitBeforeClaiming } from './commands';
import * as ending from './endings';
import { showNoClaim, showOrderMailState } from './showOrderMailState';

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

/** What the loop knows across attempts. */
function startRun(orderId: string, options: OrderMailRunOptions | undefined) {
  // Cancellation requests reach this scope; each attempt runs shielded in a non-cancellable scope of its own.
  const scope = CancellationScope.current();
  return {
    orderId,
    cancelRequested: () => scope.consideredCancelled,
    early: listenForEarlyAsks(),
    waitBeforeClaiming: waitBeforeClaiming(),
    orderWaitMs: orderVisibleWaitOf(options),
    orderWaitedMs: 0,
    firstHoldRecheckMs: firstHoldRecheckOf(options),
    /** How many times the run took each row of the table; each row's bound counts these. */
    taken: new Map<Step['kind'], number>(),
  };
}
type Run = ReturnType<typeof startRun>;

/** Sends order `orderId`'s confirmation mail exactly once; the workflow id is the order id (docs/design.md §6). */
export async function orderConfirmationMail(
  orderIdInput: string,
  options?: OrderMailRunOptions,
): Promise<OrderMailResult> {
  const run = startRun(ending.validOrderIdOrFail(orderIdInput), options);
  for (;;) {
    const ended = await CancellationScope.nonCancellable(() => oneAttempt(run));
    const step: Step =
      run.cancelRequested() && ended.kind !== 'cancelled' ? { kind: 'cancelled', left: ended } : ended;
    const times = (run.taken.get(step.kind) ?? 0) + 1;
    run.taken.set(step.kind, times);
    // The row of the step's own kind (TypeScript cannot correlate a union's kind with its row by itself).
    const next = (AFTER_STEP[step.kind] as (step: Step, run: Run, times: number) => Next)(step, run, times);
    if (next instanceof Error) throw next;
    if (next === AGAIN) continue;
    if (!('ms' in next)) return next;
    await run.waitBeforeClaiming(next);
  }
}

const AGAIN = 'claim-again';
/** What a row answers and the loop carries out: the result, the failure, a wait then a claim, or a claim. */
type Next = OrderMailResult | ReturnType<(typeof ending)['failed' | 'cancelled']> | Wait | typeof AGAIN;

/** What each way an attempt ended leads to, given how often the run took that row (this time included). */
export const AFTER_STEP = {
  finished: (step) => step.result,
  cancelled: (step, run) => ending.cancelled(step.left.kind, run.orderId, step.left),
  'order-not-visible': (step, run, orderLooks) => {
    // Waited = the timers slept so far: the same on every replay.
    if (run.orderWaitedMs >= run.orderWaitMs) {
      const values = { notFound: step.failure.message, waitedMs: run.orderWaitedMs };
      return ending.failed('order-never-visible', run.orderId, values, step.failure.cause);
    }
    const { orderId } = run;
    const delayMs = delayBeforeOrderLookAgain(orderLooks);
    run.orderWaitedMs += delayMs;
    log.info('Order not visible yet; waiting before claiming again', { orderId, orderLooks, delayMs });
    return { ms: delayMs, cancelled: () => ending.cancelled('order-not-visible', orderId, {}) };
  },
  'held-at-same-time': (step, run, times) => {
    if (times > SAME_TIME_WAITS) return ending.failed('held-at-same-time', run.orderId, step);
    const when = 'before claiming again';
    return { ms: SAME_TIME_WAIT_MS, cancelled: () => ending.cancelled('waiting', run.orderId, { when }) };
  },
  'lost-while-held': (step, run, times) => {
    if (times > RECLAIMS_AFTER_LOST_CLAIM) return step.result;
    log.info('Order mail claim held by another claim after an attempt that sent nothing; claiming again', {
      orderId: run.orderId,
      attempts: step.result.attempts,
    });
    return AGAIN;
  },
  'orphan-settled': (_step, run, settledInARow) =>
    settledInARow > ORPHAN_SETTLEMENTS
      ? ending.failed('orphans-kept-coming', run.orderId, { settledInARow })
      : AGAIN,
  held: (step, run, times) => {
    // No attempt of this run's: an operator's hold made the fence refuse it (docs/operating.md).
    const { orderId } = run;
    log.info('Sends are held; waiting for the hold to be lifted', { orderId, attempt: step.attempt });
    const ms = delayBeforeHoldRecheck(times - 1, run.firstHoldRecheckMs);
    return { ms, untilResumed: true, cancelled: () => ending.cancelled('held', orderId, step) };
  },
  'not-accepted': (step, run, runAttempts) => {
    const { orderId } = run;
    const { sent, attempt, recordedOutcome: outcome } = step;
    const next = afterAttempt(step.settings, runAttempts, { ...sent, outcome });
    if (next.kind === 'permanent') return ending.failed('permanent', orderId, step, step.cause);
    if (next.kind === 'gave-up') return ending.failed('gave-up', orderId, { runAttempts, sent });
    const { delayMs } = next;
    log.info('Order mail not accepted; waiting before the next attempt', {
      orderId,
      attempt,
      delayMs,
      outcome,
    });
    const when = `after attempt ${attempt} (${describeSendOutcome(sent)})`;
    return { ms: delayMs, cancelled: () => ending.cancelled('waiting', orderId, { when }) };
  },
} satisfies StepTable<Step, Run, Next>;

/** One attempt: claim, then send and record, or what the claim found instead. Runs non-cancellable. */
async function oneAttempt(run: Run): Promise<Step> {
  const { orderId } = run;
  let claim: ClaimResult;
  try {
    // The workflow's clock: the server's time of this workflow task, which orders the runs' claims.
    claim = await bookkeeping.claimOrderMail({ orderId, issuedAtMs: Date.now() });
  } catch (error) {
    // A local activity's failure arrives unwrapped (SDK 1.24), a regular one's in an ActivityFailure.
    const failure = error instanceof ActivityFailure ? error.cause : error;
    if (!(failure instanceof ApplicationFailure && failure.type === FailureType.OrderNotFound)) throw error;
    const notFound = ApplicationFailure.create({
      type: FailureType.OrderNotFound,
      message: failure.message,
      nonRetryable: true,
      cause: error instanceof Error ? error : undefined,
    });
    if (patched(ORDER_NOT_VISIBLE_YET_WAITS)) return { kind: 'order-not-visible', failure: notFound };
    // Runs recorded before that patch failed at once.
    showNoClaim();
    throw notFound;
  }
  switch (claim.kind) {
    case 'already-sent':
      log.info('Order mail was already sent; this run sends nothing', { orderId, outcome: claim.outcome });
      showOrderMailState({ state: 'sent', outcome: claim.outcome, attempts: claim.attempts });
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
  const { recorded, as } = await recordSendOutcome(run, claim, sent);
  // Recorded not_sent: no request was made, or the provider said (or was verified to say) it took nothing.
  if (recorded.kind === 'claim-lost')
    return lostClaim(orderId, attempt, recorded, sent, as.outcome === 'not_sent');
  const refusedByHold =
    sent.outcome === 'not_sent' && sent.errorCode === SEND_HELD && recorded.state === 'failed';
  if (refusedByHold && patched(SEND_HOLD_WAITS)) {
    // The Web UI's filter for held orders (docs/operating.md): OrderMailState = "held".
    showOrderMailState({ state: 'held', outcome: recorded.outcome, httpStatus: null });
    return { kind: 'held', attempt };
  }
  showOrderMailState({ state: recorded.state, outcome: recorded.outcome, httpStatus: sent.httpStatus });
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
  if (currentState !== null && currentState !== 'sending')
    showOrderMailState({ state: currentState, outcome: currentOutcome });
  const result =
    sent.outcome === 'accepted'
      ? ending.claimLost(orderId, attempt, 'accepted', sent.providerMessageId)
      : ending.claimLost(orderId, attempt, currentOutcome ?? null, null);
  if (currentState === 'sending' && sentNothing) return { kind: 'lost-while-held', result };
  return { kind: 'finished', result };
}

/**
 * Records the send's outcome, an unknown decided by decideUnknownOutcome from the row's facts after asking the
 * provider where it can be asked (docs/design.md §5); returns the record's answer and what it recorded.
 */
async function recordSendOutcome(run: Run, claim: Claimed, sent: SendAccepted | SendNotAccepted) {
  const base = { orderId: run.orderId, claimToken: claim.claimToken, attempt: claim.attempt };
  if (sent.outcome !== 'unknown') {
    const answered = recordOfAnswer(sent);
    const recorded = await record(base, answered, null);
    if (recorded.kind !== 'dispatch-changed') return { recorded, as: answered };
    const what = 'the record found the fence changed, though nothing was expected of it';
    throw ending.failed('unexpected-answer', base.orderId, { what });
  }
  const { settings } = claim;
  // Judged as the send came back, before any wait: whether a retry follows, and after how long.
  const runAttempts = (run.taken.get('not-accepted') ?? 0) + 1;
  const after = retryFollowing(run.cancelRequested() ? null : afterAttempt(settings, runAttempts, sent));
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
