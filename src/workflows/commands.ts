// The mail workflow's activity proxies and timers (sleep, condition) with their options, and the provider ask
// the sweep shares; the order they are issued in reads in orderConfirmationMail.ts. test/replay pins them.
import {
  ActivityFailure,
  condition,
  defineSignal,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
} from '@temporalio/workflow';
import type {
  OrderMailActivities,
  RecordOrderMailOutcomeInput,
  VerificationWait,
  VerifyOrderMailInput,
} from '../activities';
import { FailureType } from '../shared/failures';
import { sendOutcomeOfFailure } from '../shared/sendOutcome';
import { inconclusiveOfFailure, type VerificationAnswer } from '../shared/unknownOutcome';
import { PROVIDER_EVENT_SIGNAL, SEND_HOLD_RESUME_SIGNAL } from '../shared/workflowContract';
import { verifyActivityTimeoutMs, type VerificationSettings } from '../shared/workflowSettings';
import type { AttemptRef, Claimed, Wait } from './attemptStep';

// Claim, record and the read of an attempt's facts: fenced and idempotent, so retried without end, as local
// activities (docs/design.md §6, "Claim and record are local activities").
export const bookkeeping = proxyLocalActivities<OrderMailActivities>({
  // Covers the pool's statement (10 s) and client (15 s) deadlines.
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    // Retrying cannot make a missing order appear.
    nonRetryableErrorTypes: [FailureType.OrderNotFound],
  },
  // From 10 s on, backoffs wait on a durable timer instead of holding the workflow task open.
  localRetryThreshold: '10 seconds',
});

/** The record, fenced on the attempt's claim; `expectDispatched` null: nothing is expected of the dispatch fence. */
export function record(
  attempt: AttemptRef,
  fields: Omit<RecordOrderMailOutcomeInput, keyof AttemptRef | 'expectDispatched'>,
  expectDispatched: boolean | null,
) {
  return bookkeeping.recordOrderMailOutcome({ ...attempt, ...fields, expectDispatched });
}

/** The send, waited for to its real end (never given up on); its failure is kept as a cause. */
export async function send(attempt: AttemptRef, claim: Claimed) {
  // NEVER retried: a retry after an unknown outcome could send a second mail (docs/design.md §6).
  const sender = proxyActivities<OrderMailActivities>({
    startToCloseTimeout: claim.settings.sendTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
  try {
    return { sent: await sender.sendOrderMail({ ...attempt, idempotencyKey: claim.idempotencyKey }) };
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return { sent: sendOutcomeOfFailure(error), failure: error };
  }
}

/** The run's one wait before claiming again; listens from the run's start, so an early resume is kept. */
export function waitBeforeClaiming() {
  let resumed = false;
  setHandler(defineSignal(SEND_HOLD_RESUME_SIGNAL), () => {
    resumed = true;
  });
  return async (wait: Wait): Promise<void> => {
    try {
      if (!wait.untilResumed) return await sleep(wait.ms);
      await condition(() => resumed, wait.ms);
      resumed = false;
    } catch (error) {
      if (!isCancellation(error)) throw error;
      throw wait.cancelled();
    }
  };
}

// Each early ask is an activity in the run's history: a stream of events must not grow it without end.
const MAX_EARLY_ASKS = 3;

/** A provider event of the send asks for an early lookup (docs/design.md §5, "What counts as evidence"). */
export function listenForEarlyAsks() {
  let eventSeen = false;
  let asked = 0;
  setHandler(defineSignal(PROVIDER_EVENT_SIGNAL), () => {
    eventSeen = true;
  });
  return {
    requested: () => eventSeen && asked < MAX_EARLY_ASKS,
    taken: () => {
      eventSeen = false;
      asked += 1;
    },
  };
}

// Only keeps a history finite should clocks disagree (docs/design.md §6, "Asking the provider").
const MAX_EVIDENCE_WAITS = 24;

/**
 * Waits `waitMs` until "not found" can count (or an early ask), then asks; a "wait" answer is waited out and
 * asked again (the sweep asks once instead: askOnce). A cancel or a lookup past its deadline: inconclusive.
 */
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  run: AskWhile,
  waitMs: number,
): Promise<VerificationAnswer> {
  const { orderId, attempt } = input;
  log.info('Order mail outcome unknown; waiting until "not found" can count before asking the provider', {
    orderId,
    attempt,
    waitMs,
  });
  // A cancel that came first needs no timer.
  const first = run.cancelRequested() ? 'cancelled' : waitMs > 0 ? await waitToAsk(waitMs, run) : 'waited';
  if (first === 'cancelled') {
    return { kind: 'inconclusive', reason: 'the run was cancelled before the settle delay had passed' };
  }
  if (first === 'early')
    log.info('A provider event of this send arrived; asking the provider now', { orderId, attempt });
  let lastWait: VerificationWait | null = null;
  for (let waits = 0; ;) {
    const answer = await askOnce(verification, waits === 0 ? input : { ...input, evidenceWaits: waits });
    if (answer.kind !== 'wait') {
      // The answer says that it waited and why, so the attempt's audit row does (describeUnknownDecision).
      return lastWait === null ? answer : { ...answer, waited: { times: waits, reason: lastWait.reason } };
    }
    lastWait = answer;
    if (waits >= MAX_EVIDENCE_WAITS) {
      return { kind: 'inconclusive', reason: `still too early after ${waits} waits: ${answer.reason}` };
    }
    const woke = await waitToAsk(answer.waitMs, run);
    if (woke === 'cancelled') {
      return { kind: 'inconclusive', reason: `the run was cancelled while waiting: ${answer.reason}` };
    }
    if (woke === 'waited') waits++;
  }
}

interface AskWhile {
  cancelRequested: () => boolean;
  early: ReturnType<typeof listenForEarlyAsks>;
}

/** Waits `ms`, ended sooner by a cancel or by a provider event of the send (an early ask, then taken). */
async function waitToAsk(
  ms: number,
  { cancelRequested, early }: AskWhile,
): Promise<'cancelled' | 'early' | 'waited'> {
  const woke = await condition(() => cancelRequested() || early.requested(), ms);
  if (!woke) return 'waited';
  if (cancelRequested()) return 'cancelled';
  early.taken();
  return 'early';
}

export async function askOnce(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
): Promise<VerificationAnswer | VerificationWait> {
  const verifier = proxyActivities<OrderMailActivities>({
    // The lookups' one deadline plus a margin to read Postgres.
    startToCloseTimeout: verifyActivityTimeoutMs(verification),
    scheduleToCloseTimeout: verification.deadlineMs,
    // 10 s at most keeps a few tries inside the verification deadline.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
    // Slots of its own, so slow sends cannot hold it past the deadline (docs/design.md §6, "Lookup slots").
    ...(verification.taskQueue === undefined ? {} : { taskQueue: verification.taskQueue }),
  });
  try {
    return await verifier.verifyOrderMail(input);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return inconclusiveOfFailure(error, verification.deadlineMs);
  }
}
