// One failure vocabulary (STYLE.md): the ApplicationFailure type names that activities throw and the workflow
// branches on. Branch on `failure.type`, never on class names: those do not survive serialization.
// Pure: imported by workflows and activities.
import { ApplicationFailure } from '@temporalio/common';
import type { LogOutcome, SendResult } from './mailOutcome';

export const FailureType = {
  /** The mail API definitely refused this request, for good (a 4xx and the like). Thrown by the send. */
  MailRejected: 'MailRejected',
  /** The request definitely did not reach the provider, or was refused for now (408, 429, 503, refused). */
  MailNotSent: 'MailNotSent',
  /** The request may have been accepted: the connection died after it started, a 5xx, a timeout. */
  MailOutcomeUnknown: 'MailOutcomeUnknown',
  /** The claim is no longer this attempt's (an operator moved the row): the send made no request. */
  ClaimLost: 'ClaimLost',
  /**
   * Refused before any request: the order cannot be mailed as it is (its recipient is not one plain address,
   * or it is larger than the configured limits). Permanent: an operator fixes the order, then resets.
   */
  MailRefused: 'MailRefused',
  /** The order does not exist, so there is nothing to send. */
  OrderNotFound: 'OrderNotFound',
  /** The workflow was started with something that is not an order id. */
  InvalidOrderId: 'InvalidOrderId',
  /** Workflow-level: the order's mail row is held by a different workflow id. */
  ClaimHeldElsewhere: 'ClaimHeldElsewhere',
  /** Workflow-level: definitely-not-sent failures went on past the configured number of attempts. */
  MailNotSentGaveUp: 'MailNotSentGaveUp',
  /**
   * The provider's lookup failed (5xx, timeout, a dropped connection): retried by Temporal until the verify
   * activity's deadline, after which the policy decides. Thrown by the verify activity.
   */
  VerificationLookupFailed: 'VerificationLookupFailed',
} as const;

export type FailureTypeName = (typeof FailureType)[keyof typeof FailureType];

/** The details every send failure carries, so the workflow can record the truth without parsing messages. */
export interface SendFailureDetails {
  outcome: 'rejected' | 'not_sent' | 'unknown';
  httpStatus: number | null;
  errorCode: string | null;
  reason: string;
  retryAfterMs: number | null;
  /** False for not-sent failures that a retry cannot fix (the order is gone, the mail cannot be rendered). */
  retryable: boolean;
  /**
   * How long after this execution called the dispatch fence its request was over, measured on its worker:
   * a "not found" about it may count that long (plus the settle delay) after the dispatch instead of the whole
   * send timeout (src/evidence/evidenceRules.ts). Absent when this execution made no request of its own (the
   * fence found the attempt ALREADY_DISPATCHED) or none was made.
   */
  requestEndedAfterFenceMs?: number;
}

/**
 * What a ClaimLost failure carries: the row as the send found it, so the workflow can show the state the
 * operator left it in (null where the row could not be read).
 */
export interface ClaimLostDetails {
  currentState: 'sending' | 'sent' | 'failed' | null;
  currentOutcome: LogOutcome | null;
}

/** Turns a classified, non-accepted send into the failure the send activity throws. Never retried by Temporal. */
export function sendFailure(
  result: Exclude<SendResult, { outcome: 'accepted' }>,
  requestEndedAfterFenceMs: number | null = null,
): ApplicationFailure {
  const details: SendFailureDetails = {
    outcome: result.outcome,
    httpStatus: result.httpStatus,
    errorCode: result.errorCode,
    reason: result.reason,
    retryAfterMs: result.outcome === 'not_sent' ? result.retryAfterMs : null,
    retryable: result.outcome !== 'rejected',
    ...(requestEndedAfterFenceMs === null ? {} : { requestEndedAfterFenceMs }),
  };
  const type =
    result.outcome === 'rejected'
      ? FailureType.MailRejected
      : result.outcome === 'not_sent'
        ? FailureType.MailNotSent
        : FailureType.MailOutcomeUnknown;
  return ApplicationFailure.create({ type, message: result.reason, nonRetryable: true, details: [details] });
}

export function orderNotFoundFailure(orderId: string): ApplicationFailure {
  const details: SendFailureDetails = {
    outcome: 'not_sent',
    httpStatus: null,
    errorCode: null,
    reason: `order ${orderId} does not exist`,
    retryAfterMs: null,
    retryable: false,
  };
  return ApplicationFailure.create({
    type: FailureType.OrderNotFound,
    message: `Order ${orderId} does not exist; no mail was sent.`,
    nonRetryable: true,
    details: [details],
  });
}

/**
 * The send refused the mail before the dispatch fence, for good: recorded `failed`/`rejected`, never retried.
 * `reason` names what to fix in words an operator understands, and never the address itself (personal data).
 */
export function mailRefusedFailure(orderId: string, errorCode: string, reason: string): ApplicationFailure {
  const details: SendFailureDetails = {
    outcome: 'rejected',
    httpStatus: null,
    errorCode,
    reason,
    retryAfterMs: null,
    retryable: false,
  };
  return ApplicationFailure.create({
    type: FailureType.MailRefused,
    message: `Order ${orderId}: refused before sending, nothing was sent: ${reason}.`,
    nonRetryable: true,
    details: [details],
  });
}
