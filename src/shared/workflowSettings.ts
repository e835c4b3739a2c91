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
