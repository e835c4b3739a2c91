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

export function verifier(verification: VerificationSettings) {
  return proxyActivities<OrderMailActivities>({
    // The lookups' one deadline plus a margin to read Postgres.
    startToCloseTimeout: verifyActivityTimeoutMs(verification),
    scheduleToCloseTimeout: verification.deadlineMs,
    // 10 s at most keeps a few tries inside the verification deadline.
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds' },
    // Slots of its own, so slow sends cannot hold it past the deadline (docs/design.md §6, "Lookup slots").
    ...(verification.taskQueue === undefined ? {} : { taskQueue: verification.taskQueue }),
  });
}

export async function sleepOrEnd(delayMs: number, cancelled: () => CancelledFailure): Promise<void> {
  try {
    await sleep(delayMs);
  } catch (error) {
    if (!isCancellation(error)) throw error;
    throw cancelled();
  }
}

// 1, 2, 4, 8, then every 15 min (docs/design.md §6, "The hold wait").
const FIRST_RECHECK_MS = 60_000;
const LONGEST_RECHECK_MS = 15 * 60_000;

export interface HoldWait {
  wait(waits: number, cancelled: () => CancelledFailure): Promise<void>;
}

/** Listens from the run's start, so an early signal is kept. */
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
  requested(): boolean;
  taken(): void;
}

// Each early ask is an activity in the run's history: a stream of events must not grow it without end.
const MAX_EARLY_ASKS = 3;

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

// Only keeps a history finite should clocks disagree (docs/design.md §6, "Asking the provider").
const MAX_EVIDENCE_WAITS = 24;

/** A "wait" answer is waited out and asked again; the sweep asks once instead (askOnce). */
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options: { cancelRequested: () => boolean; early: EarlyAsk },
): Promise<VerificationAnswer> {
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
    const { cancelRequested, early } = options;
    const woke = await condition(() => cancelRequested() || early.requested(), answer.waitMs);
    if (woke && cancelRequested()) {
      return { kind: 'inconclusive', reason: `the run was cancelled while waiting: ${answer.reason}` };
    }
    if (woke) early.taken();
    else waits++;
  }
}

export async function askOnce(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
): Promise<VerificationAnswer | VerificationWait> {
  try {
    return await verifier(verification).verifyOrderMail(input);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // Past schedule-to-close: the last try's failure (retry state TIMEOUT), or a timeout failure.
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
