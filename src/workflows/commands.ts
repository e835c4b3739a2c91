// The mail workflow's activity proxies and timers (sleep, condition) with their options, and the provider ask
// the sweep shares; the order they are issued in reads in orderConfirmationMail.ts. test/replay pins them.
import {
  ActivityFailure,
  condition,
  defineSignal,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
  type CancelledFailure,
} from '@temporalio/workflow';
import type { OrderMailActivities, VerificationWait, VerifyOrderMailInput } from '../activities';
import { FailureType } from '../shared/failures';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import { PROVIDER_EVENT_SIGNAL, SEND_HOLD_RESUME_SIGNAL } from '../shared/workflowContract';
import { verifyActivityTimeoutMs, type VerificationSettings } from '../shared/workflowSettings';

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

/** The send: NEVER retried, since a retry after an unknown outcome could send a second mail (docs/design.md §6). */
export function sender(sendTimeoutMs: number) {
  return proxyActivities<OrderMailActivities>({
    startToCloseTimeout: sendTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
}

/** The provider lookup, retried (a read) until the verification deadline; past it the policy decides. */
export function verifier(verification: VerificationSettings) {
  return proxyActivities<OrderMailActivities>({
    // The lookups' one deadline plus a margin to read Postgres.
    startToCloseTimeout: verifyActivityTimeoutMs(verification),
    scheduleToCloseTimeout: verification.deadlineMs,
    // 10 s at most keeps a few tries inside the verification deadline.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
  });
}

/** A durable wait; a cancel during it ends the run Cancelled with what `cancelled()` explains. */
export async function sleepOrEnd(delayMs: number, cancelled: () => CancelledFailure): Promise<void> {
  try {
    await sleep(delayMs);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    throw cancelled();
  }
}

// Without a resume signal, a held run claims again after 1 min, then 2, 4, 8, and every 15 min from then on.
const FIRST_RECHECK_MS = 60_000;
const LONGEST_RECHECK_MS = 15 * 60_000;

export interface HoldWait {
  /** Waits for a resume signal or the fallback timer; `waits` is how many held waits came before. */
  wait(waits: number, cancelled: () => CancelledFailure): Promise<void>;
}

/** Listens for the resume signal from the run's start, so a signal that arrives before the wait is kept. */
export function resumeOnSignal(): HoldWait {
  let resumed = false;
  setHandler(defineSignal(SEND_HOLD_RESUME_SIGNAL), () => {
    resumed = true;
  });
  return {
    async wait(waits, cancelled) {
      const recheckMs = Math.min(FIRST_RECHECK_MS * 2 ** Math.min(waits, 10), LONGEST_RECHECK_MS);
      try {
        await condition(() => resumed, recheckMs);
      } catch (error) {
        if (!isCancellation(error)) throw error;
        throw cancelled();
      }
      resumed = false;
    },
  };
}

/** A provider event of the send asks for an early lookup (docs/design.md §5, "What counts as evidence"). */
export interface EarlyAsk {
  /** Whether an event came since the last early ask (and this run may still act on one). */
  requested(): boolean;
  /** The early ask is being made: a later wait ends early only for a later event. */
  taken(): void;
}

// Each early ask is an activity in the run's history: a stream of events must not grow it without end.
const MAX_EARLY_ASKS = 3;

/** Listens for PROVIDER_EVENT_SIGNAL from the run's start. */
export function earlyAskOnProviderEvents(): EarlyAsk {
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

// Caps the "wait" answers only to keep a history finite should clocks disagree; the activity's own deadline
// (MAIL_VERIFY_DEADLINE_MS) ends a real wait long before (docs/design.md §5, "What counts as evidence").
const MAX_EVIDENCE_WAITS = 24;

/**
 * Asks the provider whether a send reached it. A "wait" answer (too early for "not found" to count) is waited
 * out on a durable timer and asked again, unless `waitForEvidence: false` (the sweep leaves it for later).
 */
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options: { waitForEvidence: false },
): Promise<VerificationAnswer | VerificationWait>;
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options?: { waitForEvidence?: true; cancelRequested?: () => boolean; early?: EarlyAsk },
): Promise<VerificationAnswer>;
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options: { waitForEvidence?: boolean; cancelRequested?: () => boolean; early?: EarlyAsk } = {},
): Promise<VerificationAnswer | VerificationWait> {
  let lastWait: VerificationWait | null = null;
  for (let waits = 0; ;) {
    const answer = await askOnce(verification, waits === 0 ? input : { ...input, evidenceWaits: waits });
    if (answer.kind !== 'wait' || options.waitForEvidence === false) {
      // The answer says that it waited and why, so the attempt's audit row does (describeUnknownDecision).
      return lastWait === null || answer.kind === 'wait'
        ? answer
        : { ...answer, waited: { times: waits, reason: lastWait.reason } };
    }
    lastWait = answer;
    if (waits >= MAX_EVIDENCE_WAITS) {
      return { kind: 'inconclusive', reason: `still too early after ${waits} waits: ${answer.reason}` };
    }
    const cancelRequested = options.cancelRequested ?? (() => false);
    const early = options.early;
    const woke = await condition(() => cancelRequested() || (early?.requested() ?? false), answer.waitMs);
    if (woke && cancelRequested()) {
      return { kind: 'inconclusive', reason: `the run was cancelled while waiting: ${answer.reason}` };
    }
    if (woke) early?.taken();
    else waits++;
  }
}

async function askOnce(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
): Promise<VerificationAnswer | VerificationWait> {
  try {
    return await verifier(verification).verifyOrderMail(input);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // Past the schedule-to-close deadline Temporal hands over the last try's failure (retry state TIMEOUT),
    // or a timeout failure when the last try itself timed out.
    const deadlinePassed = error.retryState === 'TIMEOUT' || error.cause instanceof TimeoutFailure;
    const last = error.cause?.message ? ` (last: ${error.cause.message})` : '';
    return {
      kind: 'inconclusive',
      reason: deadlinePassed
        ? `the lookup did not succeed within its deadline of ${Math.round(verification.deadlineMs / 1000)} s${last}`
        : `verification failed${last}`,
    };
  }
}
