// Pure decisions of the workflow: what a send's result or failure means, and what to record for it
// (DESIGN.md §5). Kept apart from the workflow so they can be table-tested without a Temporal server.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { FailureType, type ClaimLostDetails, type SendFailureDetails } from '../shared/failures';
import type { MailOutcome, UnknownOutcomePolicy, UnknownSettlement } from '../shared/mailOutcome';
import type { IdempotencyRetrySettings } from '../shared/workflowSettings';

export type SendVerdict =
  | { kind: 'accepted'; httpStatus: number; providerMessageId: string | null }
  | { kind: 'not-accepted'; details: SendFailureDetails; failureType: string; cause: ActivityFailure }
  | { kind: 'claim-lost'; row: ClaimLostDetails };

const SEND_FAILURE_TYPES: ReadonlySet<string> = new Set([
  FailureType.MailRejected,
  FailureType.MailNotSent,
  FailureType.MailOutcomeUnknown,
  FailureType.MailRefused,
  FailureType.OrderNotFound,
]);

/**
 * Reads the send activity's failure. Anything that is not one of the send's own typed failures — a
 * start-to-close timeout (the worker died mid-send), a cancellation, an unexpected error — may have
 * happened after the request left, so it is unknown. The record step narrows an unknown that never passed
 * the dispatch fence down to not_sent, from the row itself.
 */
export function verdictOfSendFailure(error: unknown): SendVerdict {
  if (!(error instanceof ActivityFailure)) throw error;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.ClaimLost)
    return { kind: 'claim-lost', row: claimLostDetails(cause.details?.[0]) };
  if (cause instanceof ApplicationFailure && cause.type && SEND_FAILURE_TYPES.has(cause.type)) {
    const details = cause.details?.[0];
    if (isSendFailureDetails(details))
      return { kind: 'not-accepted', details, failureType: cause.type, cause: error };
  }
  return {
    kind: 'not-accepted',
    details: unknownDetails(describeUnexpected(cause)),
    failureType: FailureType.MailOutcomeUnknown,
    cause: error,
  };
}

function describeUnexpected(cause: unknown): { reason: string; errorCode: string | null } {
  if (cause instanceof TimeoutFailure) {
    return {
      reason: `the send activity timed out (${cause.timeoutType}): its worker may have died mid-send`,
      errorCode: `TIMEOUT_${cause.timeoutType}`,
    };
  }
  if (cause instanceof CancelledFailure)
    return { reason: `the send activity was cancelled: ${cause.message}`, errorCode: 'CANCELLED' };
  if (cause instanceof ApplicationFailure) {
    return {
      reason: `the send activity failed unexpectedly: ${cause.message}`,
      errorCode: cause.type ?? null,
    };
  }
  return { reason: 'the send activity failed unexpectedly', errorCode: null };
}

function unknownDetails(described: { reason: string; errorCode: string | null }): SendFailureDetails {
  return { outcome: 'unknown', httpStatus: null, retryAfterMs: null, retryable: true, ...described };
}

function claimLostDetails(value: unknown): ClaimLostDetails {
  // Histories from before ClaimLost carried details have none: the row is then simply not known here.
  const candidate = (typeof value === 'object' && value !== null ? value : {}) as Partial<ClaimLostDetails>;
  return { currentState: candidate.currentState ?? null, currentOutcome: candidate.currentOutcome ?? null };
}

function isSendFailureDetails(value: unknown): value is SendFailureDetails {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<SendFailureDetails>;
  return (
    (candidate.outcome === 'rejected' ||
      candidate.outcome === 'not_sent' ||
      candidate.outcome === 'unknown') &&
    typeof candidate.reason === 'string' &&
    typeof candidate.retryable === 'boolean'
  );
}

export interface RecordDecision {
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownSettlement | null;
}

/**
 * The row a not-accepted send leads to. Unknown follows the configured policy, and the row names it; unless
 * it is retried under the provider's idempotency key, which leaves the row failed for the next attempt and
 * says so ('idempotent-retry'), since it is no policy's doing.
 */
export function recordDecisionFor(
  details: SendFailureDetails,
  policy: UnknownOutcomePolicy,
  retryUnderIdempotencyKey = false,
): RecordDecision {
  if (details.outcome !== 'unknown')
    return { state: 'failed', outcome: details.outcome, unknownPolicy: null };
  if (retryUnderIdempotencyKey)
    return { state: 'failed', outcome: 'unknown', unknownPolicy: 'idempotent-retry' };
  return { state: policy === 'assume-sent' ? 'sent' : 'failed', outcome: 'unknown', unknownPolicy: policy };
}

/** Whether an unknown outcome can be worth asking the provider about at all: a window, and an attempt left. */
export function idempotentRetryConceivable(
  details: SendFailureDetails,
  idempotency: IdempotencyRetrySettings | null | undefined,
  attempt: number,
  maxSendAttempts: number,
): idempotency is IdempotencyRetrySettings {
  return details.outcome === 'unknown' && idempotency != null && attempt < maxSendAttempts;
}

/**
 * Whether the retry's request will still reach the provider inside its idempotency window: the window counts
 * from the order's first dispatch (the earliest request that carried the key), and the retry's request leaves
 * after the backoff and lands within the send timeout. The safety margin is not relied on. Outside the window
 * the provider would treat the key as new and could send a second mail, so the policy applies instead.
 */
export function withinIdempotencyWindow(input: {
  idempotency: IdempotencyRetrySettings;
  sinceFirstDispatchMs: number | null;
  delayMs: number;
  sendTimeoutMs: number;
}): boolean {
  const { idempotency, sinceFirstDispatchMs, delayMs, sendTimeoutMs } = input;
  // Nothing ever dispatched: no key was used, and the record step will say "not sent" from the row itself.
  if (sinceFirstDispatchMs === null) return false;
  return sinceFirstDispatchMs + delayMs + sendTimeoutMs < idempotency.windowMs - idempotency.safetyMarginMs;
}

/** What the log says about an unknown outcome retried under the key, for the operator reading it. */
export function idempotentRetryNote(reason: string, sinceFirstDispatchMs: number, windowMs: number): string {
  return (
    `${reason}; retried with the same idempotency key, which the provider dedupes ` +
    `(${Math.round(sinceFirstDispatchMs / 1000)} s after the first dispatch, window ${Math.round(windowMs / 1000)} s)`
  );
}
