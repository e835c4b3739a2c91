// How the workflow reads the send activity's failure (the outcome table): which outcome it stands for. What
// an unknown one becomes is decided elsewhere, by src/shared/unknownOutcome.ts. Pure, so it is table-tested
// without a Temporal server.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/workflow';
import { FailureType, type ClaimLostDetails, type SendFailureDetails } from '../shared/failures';

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
 * happened after the request left, so it is unknown. Whether the attempt passed the dispatch fence at all is
 * read from the row before the unknown is decided.
 */
export function verdictOfSendFailure(error: unknown): SendVerdict {
  if (!(error instanceof ActivityFailure)) throw error;
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.ClaimLost)
    return { kind: 'claim-lost', row: cause.details?.[0] as ClaimLostDetails };
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
