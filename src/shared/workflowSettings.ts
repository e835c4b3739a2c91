// Settings the workflow may not read from the environment: the claim's result carries them into history
// (docs/design.md §6, "The workflow reads no clock and no environment").
import type { MailOutcome, UnknownOutcomePolicy } from './mailOutcome';

export interface OrderMailWorkflowSettings {
  unknownOutcomePolicy: UnknownOutcomePolicy;
  sendTimeoutMs: number;
  /** Claims per run before it fails; a reset starts afresh. */
  maxSendAttempts: number;
  retryInitialIntervalMs: number;
  retryMaxIntervalMs: number;
  /** Set where unknowns are retried under the key (docs/design.md §5); else null. */
  idempotency: IdempotencyRetrySettings | null;
  /** Set where unknowns are verified with the provider (MAIL_VERIFY); else null. */
  verification: VerificationSettings | null;
}

export interface VerificationSettings {
  settleDelayMs: number;
  /** All lookups of one verify try together. */
  lookupTimeoutMs: number;
  deadlineMs: number;
  /**
   * The task queue lookups are scheduled on, whose worker has slots apart from the sends' (docs/design.md §6,
   * "Lookup slots"). Absent: the run's own queue, as in runs claimed before it and in a single-worker setup.
   */
  taskQueue?: string;
}

/** `settings` with their lookups scheduled on `taskQueue`; the claim carries that into the run's history. */
export function withLookupTaskQueue(
  settings: OrderMailWorkflowSettings,
  taskQueue: string,
): OrderMailWorkflowSettings {
  const { verification } = settings;
  return verification === null ? settings : { ...settings, verification: { ...verification, taskQueue } };
}

/** Room for the verify activity's Postgres reads beyond its lookups. */
export const VERIFY_ACTIVITY_MARGIN_MS = 5_000;

export function verifyActivityTimeoutMs(verification: Pick<VerificationSettings, 'lookupTimeoutMs'>): number {
  return verification.lookupTimeoutMs + VERIFY_ACTIVITY_MARGIN_MS;
}

/** How long until a lookup's "not found" may count: the request's longest life and the settle delay after dispatch. */
export function msUntilNotFoundCounts(
  sinceDispatchMs: number,
  requestMayLastMs: number,
  settleDelayMs: number,
) {
  return Math.max(0, requestMayLastMs + settleDelayMs - sinceDispatchMs);
}

export interface IdempotencyRetrySettings {
  /** Resend documents 24 h. */
  windowMs: number;
  safetyMarginMs: number;
}

/** Exponential backoff, never sooner than the provider's Retry-After. */
export function delayBeforeNextAttempt(
  settings: Pick<OrderMailWorkflowSettings, 'retryInitialIntervalMs' | 'retryMaxIntervalMs'>,
  runAttempt: number,
  retryAfterMs: number | null,
): number {
  const exponential = settings.retryInitialIntervalMs * 2 ** Math.max(0, runAttempt - 1);
  const backoff = Math.min(settings.retryMaxIntervalMs, exponential);
  return Math.max(backoff, retryAfterMs ?? 0);
}

/** What follows a run's attempt that was not accepted: another after `delayMs`, or the run ends. */
export type AfterAttempt = { kind: 'retry'; delayMs: number } | { kind: 'permanent' } | { kind: 'gave-up' };

/**
 * The one definition of what follows this attempt (docs/design.md §6), for the workflow before it decides an
 * unknown and after it records, and for the model checker. `runAttempts` counts this one.
 */
export function afterAttempt(
  settings: Pick<
    OrderMailWorkflowSettings,
    'maxSendAttempts' | 'retryInitialIntervalMs' | 'retryMaxIntervalMs'
  >,
  runAttempts: number,
  ended: { outcome: MailOutcome; retryable: boolean; retryAfterMs: number | null },
): AfterAttempt {
  if (ended.outcome === 'rejected' || !ended.retryable) return { kind: 'permanent' };
  if (runAttempts >= settings.maxSendAttempts) return { kind: 'gave-up' };
  return { kind: 'retry', delayMs: delayBeforeNextAttempt(settings, runAttempts, ended.retryAfterMs) };
}

/** The workflow's optional second argument (tests); the order service passes none. */
export interface OrderMailRunOptions {
  orderVisibleWaitMs?: number;
  /** The hold wait's first fallback timer, so a test sees it fire without waiting a minute. */
  firstHoldRecheckMs?: number;
}

// Why 5 minutes and the 0.5-5 s timers: docs/design.md §6, "A claim that finds no order waits for it".
export const ORDER_VISIBLE_WAIT_MS = 5 * 60_000;
const ORDER_VISIBLE_RETRY_INITIAL_MS = 500;
const ORDER_VISIBLE_RETRY_MAX_MS = 5_000;

export function orderVisibleWaitOf(options: OrderMailRunOptions | undefined): number {
  const wait = options?.orderVisibleWaitMs;
  return typeof wait === 'number' && Number.isFinite(wait) && wait > 0 ? wait : ORDER_VISIBLE_WAIT_MS;
}

export function delayBeforeOrderLookAgain(tries: number): number {
  return Math.min(ORDER_VISIBLE_RETRY_MAX_MS, ORDER_VISIBLE_RETRY_INITIAL_MS * 2 ** Math.max(0, tries - 1));
}

// 1, 2, 4, 8, then every 15 min (docs/design.md §6, "The hold wait").
const FIRST_HOLD_RECHECK_MS = 60_000;
const LONGEST_HOLD_RECHECK_MS = 15 * 60_000;

export function firstHoldRecheckOf(options: OrderMailRunOptions | undefined): number {
  const first = options?.firstHoldRecheckMs;
  return typeof first === 'number' && Number.isFinite(first) && first > 0 ? first : FIRST_HOLD_RECHECK_MS;
}

/** The hold wait's fallback timer, should the resume signal be missed. */
export function delayBeforeHoldRecheck(waits: number, firstMs: number): number {
  return Math.min(firstMs * 2 ** Math.min(waits, 10), LONGEST_HOLD_RECHECK_MS);
}
