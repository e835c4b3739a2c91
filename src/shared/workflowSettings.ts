// Settings the workflow needs but must not read from the environment (it is deterministic). Workers hold them
// in their configuration and hand them over in the claim activity's result, so they are recorded in history
// and a replay sees exactly what the original run saw.
import type { UnknownOutcomePolicy } from './mailOutcome';

export interface OrderMailWorkflowSettings {
  /** How an unknown outcome is settled: the business setting of the seed case study. */
  unknownOutcomePolicy: UnknownOutcomePolicy;
  /** The send activity's startToCloseTimeout; longer than the HTTP client's overall deadline. */
  sendTimeoutMs: number;
  /** How many claims one run makes for definitely-not-sent failures before it gives up and fails. */
  maxSendAttempts: number;
  /** Backoff between not-sent attempts: initial * 2^(attempt-1), capped, and never below Retry-After. */
  retryInitialIntervalMs: number;
  retryMaxIntervalMs: number;
}

/** The durable wait before the next attempt: exponential backoff, but never sooner than the provider asked. */
export function delayBeforeNextAttempt(
  settings: Pick<OrderMailWorkflowSettings, 'retryInitialIntervalMs' | 'retryMaxIntervalMs'>,
  attempt: number,
  retryAfterMs: number | null,
): number {
  const exponential = settings.retryInitialIntervalMs * 2 ** Math.max(0, attempt - 1);
  const backoff = Math.min(settings.retryMaxIntervalMs, exponential);
  return Math.max(backoff, retryAfterMs ?? 0);
}
