// ONE SEND'S OUTCOME (docs/design.md §5), one shape from the send activity to the workflow's table. The send
// activity returns it (accepted) or throws it as the details of its typed ApplicationFailure (so the Web UI
// shows a failed send, and the failure chain WorkflowFailedError → ActivityFailure → ApplicationFailure.type
// names it); the workflow reads it back unchanged (sendOutcomeOfFailure), records it, and hands it to its
// loop in the attempt's Step. The transport's classification (SendResult, src/shared/mailOutcome.ts) is its
// first part: the activity completes it with what only the activity knows (whether a retry can help, how long
// its request lasted after the fence). Pure: imported by the activity and by the workflow.
import { ActivityFailure, ApplicationFailure, CancelledFailure, TimeoutFailure } from '@temporalio/common';
import { FailureType } from './failures';
import type { LogOutcome, SendResult } from './mailOutcome';

export type SendOutcome = SendAccepted | SendNotAccepted | SendClaimLost;

/** The provider took the request: its status and message id. The only outcome the activity returns. */
export type SendAccepted = Extract<SendResult, { outcome: 'accepted' }>;

/** The transport's word on a request it did not get accepted, before the activity completes it. */
export type TransportNotAccepted = Exclude<SendResult, { outcome: 'accepted' }>;

/** Rejected, not sent or unknown: what the workflow records (deciding an unknown first) and acts on. */
export interface SendNotAccepted {
  outcome: 'rejected' | 'not_sent' | 'unknown';
  /** The type of the ApplicationFailure that carries it, and that a run failing for it fails with. */
  failureType: NotAcceptedFailureType;
  httpStatus: number | null;
  errorCode: string | null;
  /** Never carries secrets or personal data. */
  reason: string;
  /** The provider's Retry-After, in milliseconds, when a not-sent answer gave one. */
  retryAfterMs: number | null;
  /** False where a retry cannot help: a rejection, an order that is gone or cannot be mailed as it is. */
  retryable: boolean;
  /**
   * How long after this execution called the dispatch fence its request was over, measured on its worker: a
   * "not found" about it may count that long (plus the settle delay) after the dispatch instead of the whole
   * send timeout (src/evidence/evidenceRules.ts). Null when this execution made no request of its own (the
   * fence found the attempt ALREADY_DISPATCHED, it never passed the fence, the send timed out).
   */
  requestEndedAfterFenceMs: number | null;
}

/** The dispatch fence found the claim no longer this attempt's (an operator moved the row): no request. */
export interface SendClaimLost {
  outcome: 'claim-lost';
  /** The row as the send found it, for the workflow to show (null where it could not be read). */
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

/** The transport's classification, completed by the activity. A rejection is permanent; the rest may pass. */
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

/**
 * The errorCode of a send the dispatch fence refused because an operator holds sends (migration 0060): no
 * request was made, and the run waits for `resume` instead of spending an attempt (src/workflows/commands.ts).
 */
export const SEND_HELD = 'SEND_HELD';

/** The failure the send activity throws for an outcome it did not get accepted. Never retried by Temporal. */
export function sendFailure(sent: SendNotAccepted, message: string = sent.reason): ApplicationFailure {
  return ApplicationFailure.create({ type: sent.failureType, message, nonRetryable: true, details: [sent] });
}

/**
 * The claim found the order's mail bound to a provider this worker is not configured for: nothing was claimed
 * or sent, and no retry here can change that. Its details name the provider for ops and the Web UI.
 */
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

/** The order does not exist: nothing to send, and no retry can change that (thrown by the claim and the send). */
export function orderNotFoundFailure(orderId: string): ApplicationFailure {
  const reason = `order ${orderId} does not exist`;
  return sendFailure(
    { ...notAccepted('not_sent', null, reason), failureType: FailureType.OrderNotFound, retryable: false },
    `Order ${orderId} does not exist; no mail was sent.`,
  );
}

/**
 * The send refused the mail before the dispatch fence, for good: recorded `failed`/`rejected`, never retried.
 * `reason` names what to fix in words an operator understands, and never the address itself (personal data).
 */
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

function notAccepted(outcome: 'rejected' | 'not_sent', errorCode: string | null, reason: string) {
  return notAcceptedOutcome({ outcome, httpStatus: null, errorCode, reason, retryAfterMs: null });
}

/**
 * The outcome the send activity's failure carries, as the workflow reads it back: the send's own typed
 * failures carry it unchanged. Anything else (a start-to-close timeout: the worker died mid-send; a
 * cancellation; an unexpected error; a typed failure without its outcome) may have happened after the request
 * left, so it is an unknown of the same shape. Whether the attempt passed the dispatch fence at all is read
 * from the row before the unknown is decided.
 */
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

/** The outcome in words for an operator: reasons from an HTTP answer already start with "HTTP <status>". */
export function describeSendOutcome(sent: SendNotAccepted): string {
  const hasStatus = sent.httpStatus === null || sent.reason.startsWith(`HTTP ${sent.httpStatus}`);
  return hasStatus ? sent.reason : `HTTP ${sent.httpStatus}: ${sent.reason}`;
}
