// Settings the workflow needs but must not read from the environment (it is deterministic). Workers hold them
// in their configuration and hand them over in the claim activity's result, so they are recorded in history
// and a replay sees exactly what the original run saw.
import type { UnknownOutcomePolicy } from './mailOutcome';

export interface OrderMailWorkflowSettings {
  /** How an unknown outcome is settled: the business setting of the seed case study. */
  unknownOutcomePolicy: UnknownOutcomePolicy;
  /** The send activity's startToCloseTimeout; longer than the HTTP client's overall deadline. */
  sendTimeoutMs: number;
  /**
   * How many claims one run makes before it gives up and fails. Counted per run: a reset or an operator's
   * retry starts a run with its full number of attempts and its backoff from the beginning.
   */
  maxSendAttempts: number;
  /** Backoff between not-sent attempts: initial * 2^(attempt-1), capped, and never below Retry-After. */
  retryInitialIntervalMs: number;
  retryMaxIntervalMs: number;
  /**
   * Set when the provider dedupes by idempotency key (Resend) and retries under the key are enabled: an
   * unknown outcome is then retried with the same key while the key's window lasts, instead of being settled
   * by the policy (src/shared/unknownOutcome.ts). Null otherwise.
   */
  idempotency: IdempotencyRetrySettings | null;
  /**
   * Set when unknown outcomes are verified with the provider (MAIL_VERIFY, src/verification/): the workflow
   * then waits the settle delay on a durable timer and asks before the policy may decide. Null otherwise.
   */
  verification: VerificationSettings | null;
}

export interface VerificationSettings {
  /** How long after the send its provider's lookup (or webhook) can be trusted to have seen it. */
  settleDelayMs: number;
  /**
   * The deadline of all lookups of one verify try together (every page, every lookup); the activity's
   * start-to-close timeout is this plus VERIFY_ACTIVITY_MARGIN_MS (verifyActivityTimeoutMs).
   */
  lookupTimeoutMs: number;
  /** How long a failing lookup is retried before verification gives up and the policy decides. */
  deadlineMs: number;
}

/** What the verify activity's start-to-close timeout keeps beyond its lookups' deadline: Postgres reads. */
export const VERIFY_ACTIVITY_MARGIN_MS = 5_000;

/** The verify activity's start-to-close timeout: the workflow sets it, the activity fits its lookups in it. */
export function verifyActivityTimeoutMs(verification: Pick<VerificationSettings, 'lookupTimeoutMs'>): number {
  return verification.lookupTimeoutMs + VERIFY_ACTIVITY_MARGIN_MS;
}

export interface IdempotencyRetrySettings {
  /** How long the provider dedupes a repeated key (MAIL_IDEMPOTENCY_WINDOW_MS; Resend documents 24 h). */
  windowMs: number;
  /**
   * How much of the window is not relied on (MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS): clock differences between
   * Postgres and the provider, and where exactly the provider starts counting.
   */
  safetyMarginMs: number;
}

/**
 * The durable wait after this run's `runAttempt`-th attempt: exponential backoff, but never sooner than the
 * provider asked.
 */
export function delayBeforeNextAttempt(
  settings: Pick<OrderMailWorkflowSettings, 'retryInitialIntervalMs' | 'retryMaxIntervalMs'>,
  runAttempt: number,
  retryAfterMs: number | null,
): number {
  const exponential = settings.retryInitialIntervalMs * 2 ** Math.max(0, runAttempt - 1);
  const backoff = Math.min(settings.retryMaxIntervalMs, exponential);
  return Math.max(backoff, retryAfterMs ?? 0);
}

/**
 * What a start may carry besides the order id (the workflow's second argument, optional). Only for runs that
 * need another bound than the default, such as tests; the order service's starts pass none.
 */
export interface OrderMailRunOptions {
  /** How long a run waits for its order's row to become visible before it fails OrderNotFound. */
  orderVisibleWaitMs?: number;
}

// The order service may start the mail a moment before its own transaction's row is visible; a commit that is
// not visible after 5 minutes is no longer "a moment", and the run ends visibly (failed OrderNotFound).
export const ORDER_VISIBLE_WAIT_MS = 5 * 60_000;
// Claims again after 0.5 s, 1 s, 2 s, then every 5 s: the mail goes out within seconds of the row appearing,
// and a run that waits the whole bound makes about 60 claims, a small history.
const ORDER_VISIBLE_RETRY_INITIAL_MS = 500;
const ORDER_VISIBLE_RETRY_MAX_MS = 5_000;

/** The bound a run waits for its order: the start's own, if it carries a positive one, else the default. */
export function orderVisibleWaitOf(options: OrderMailRunOptions | undefined): number {
  const wait = options?.orderVisibleWaitMs;
  return typeof wait === 'number' && Number.isFinite(wait) && wait > 0 ? wait : ORDER_VISIBLE_WAIT_MS;
}

/** The durable wait before claiming again after the `tries`-th claim that found no order (1, 2, ...). */
export function delayBeforeOrderLookAgain(tries: number): number {
  return Math.min(ORDER_VISIBLE_RETRY_MAX_MS, ORDER_VISIBLE_RETRY_INITIAL_MS * 2 ** Math.max(0, tries - 1));
}
