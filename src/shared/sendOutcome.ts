// One shape per send's outcome, from the send activity to the workflow (docs/design.md §5). Pure.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { FailureType } from './failures';
import type { LogOutcome, SendResult } from './mailOutcome';

export type SendOutcome = SendAccepted | SendNotAccepted | SendClaimLost;

/** The only outcome the activity returns; the others are thrown as failure details. */
export type SendAccepted = Extract<SendResult, { outcome: 'accepted' }>;

export type TransportNotAccepted = Exclude<SendResult, { outcome: 'accepted' }>;

export interface SendNotAccepted {
  outcome: 'rejected' | 'not_sent' | 'unknown';
  failureType: NotAcceptedFailureType;
  httpStatus: number | null;
  errorCode: string | null;
  /** No secrets or personal data. */
  reason: string;
  retryAfterMs: number | null;
  retryable: boolean;
  /** Lets "not found" count sooner than the whole send timeout; null without a request of its own. */
  requestEndedAfterFenceMs: number | null;
}

export interface SendClaimLost {
  outcome: 'claim-lost';
  row: { currentState: 'sending' | 'sent' | 'failed' | null; currentOutcome: LogOutcome | null };
}

export type NotAcceptedFailureType =
  | typeof FailureType.MailRejected
  | typeof FailureType.MailRefused
  | typeof FailureType.MailNotSent
  | typeof FailureType.OrderNotFound
  | typeof FailureType.MailOutcomeUnknown;

const FAILURE_TYPE_OF = {
  rejected: FailureType.MailRejected,
  not_sent: FailureType.MailNotSent,
  unknown: FailureType.MailOutcomeUnknown,
} as const;

export function notAcceptedOutcome(
  result: TransportNotAccepted,
  requestEndedAfterFenceMs: number | null = null,
): SendNotAccepted {
  return {
    outcome: result.outcome,
    failureType: FAILURE_TYPE_OF[result.outcome],
    httpStatus: result.httpStatus,
    errorCode: result.errorCode,
    reason: result.reason,
    retryAfterMs: result.outcome === 'not_sent' ? result.retryAfterMs : null,
    retryable: result.outcome !== 'rejected',
    requestEndedAfterFenceMs,
  };
}

/** What the provider's own answer is recorded as (an unknown is decided by decideUnknownOutcome instead). */
export function recordOfAnswer(sent: SendAccepted | SendNotAccepted) {
  const accepted = sent.outcome === 'accepted';
  return {
    state: accepted ? ('sent' as const) : ('failed' as const),
    outcome: sent.outcome,
    unknownPolicy: null,
    providerMessageId: accepted ? sent.providerMessageId : null,
    httpStatus: sent.httpStatus,
    error: accepted ? null : sent.reason,
  };
}

/** The fence refused: an operator holds sends (docs/design.md §6, "The hold wait"). */
export const SEND_HELD = 'SEND_HELD';

/** Never retried by Temporal. */
export function sendFailure(sent: SendNotAccepted, message: string = sent.reason): ApplicationFailure {
  return ApplicationFailure.create({ type: sent.failureType, message, nonRetryable: true, details: [sent] });
}

export function providerNotConfiguredFailure(
  orderId: string,
  provider: string,
  explanation: string,
): ApplicationFailure {
  return ApplicationFailure.create({
    type: FailureType.ProviderNotConfigured,
    message: `Order ${orderId}: nothing was claimed or sent: ${explanation}.`,
    nonRetryable: true,
    details: [{ provider }],
  });
}

export function orderNotFoundFailure(orderId: string): ApplicationFailure {
  const reason = `order ${orderId} does not exist`;
  return sendFailure(
    { ...notAccepted('not_sent', null, reason), failureType: FailureType.OrderNotFound, retryable: false },
    `Order ${orderId} does not exist; no mail was sent.`,
  );
}

/** `reason` names what to fix, never the address itself (personal data). */
export function mailRefusedFailure(orderId: string, errorCode: string, reason: string): ApplicationFailure {
  return sendFailure(
    { ...notAccepted('rejected', errorCode, reason), failureType: FailureType.MailRefused },
    `Order ${orderId}: refused before sending, nothing was sent: ${reason}.`,
  );
}

export function claimLostFailure(orderId: string, row: SendClaimLost['row']): ApplicationFailure {
  const lost: SendClaimLost = { outcome: 'claim-lost', row };
  return ApplicationFailure.create({
    type: FailureType.ClaimLost,
    message: `Order ${orderId}: the mail claim is no longer held by this attempt; no request was made.`,
    nonRetryable: true,
    details: [lost],
  });
}

/** Not accepted, and no HTTP answer to tell of. */
export function notAccepted(outcome: 'rejected' | 'not_sent', errorCode: string | null, reason: string) {
  return notAcceptedOutcome({ outcome, httpStatus: null, errorCode, reason, retryAfterMs: null });
}

/** Any failure that is not the send's own typed one may have come after the request left: an unknown. */
export function sendOutcomeOfFailure(failure: ActivityFailure): SendNotAccepted | SendClaimLost {
  const cause = failure.cause;
  if (cause instanceof ApplicationFailure && cause.type === FailureType.ClaimLost) {
    const lost = cause.details?.[0] as Partial<SendClaimLost> | undefined;
    return { outcome: 'claim-lost', row: lost?.row ?? { currentState: null, currentOutcome: null } };
  }
  const carried: unknown = cause instanceof ApplicationFailure ? cause.details?.[0] : undefined;
  if (cause instanceof ApplicationFailure && isNotAccepted(carried) && carried.failureType === cause.type) {
    return carried;
  }
  return notAcceptedOutcome({ outcome: 'unknown', httpStatus: null, ...unexpected(cause) });
}

function unexpected(cause: unknown): { reason: string; errorCode: string | null } {
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

function isNotAccepted(value: unknown): value is SendNotAccepted {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<SendNotAccepted>;
  return (
    (candidate.outcome === 'rejected' ||
      candidate.outcome === 'not_sent' ||
      candidate.outcome === 'unknown') &&
    typeof candidate.failureType === 'string' &&
    typeof candidate.reason === 'string' &&
    typeof candidate.retryable === 'boolean'
  );
}

export function describeSendOutcome(sent: SendNotAccepted): string {
  const hasStatus = sent.httpStatus === null || sent.reason.startsWith(`HTTP ${sent.httpStatus}`);
  return hasStatus ? sent.reason : `HTTP ${sent.httpStatus}: ${sent.reason}`;
}
