// How the send activity's time (its startToCloseTimeout, SEND_ACTIVITY_TIMEOUT_MS) is shared out, in one
// place for the configuration check and the activity itself. The dispatch fence splits it in two:
//
//   | before the fence: load the order, render, wait for a connection, (SMTP: connect, AUTH), set the fence |
//   | after the fence: the transport's overall deadline (MAIL_OVERALL_TIMEOUT_MS), nothing else            |
//   | a completion margin: classify, log, report the result to Temporal                                    |
//
// Everything before the fence must end by its deadline, or the send gives up as definitely not sent: the
// request is made only when the whole transport deadline still fits before Temporal's timeout. So Temporal
// never times out a send whose request is still running because it queued first, and a send it gave up on
// never makes its request afterwards. Pure.

/** Kept after the transport's deadline: the classification and the completion's way to the server. */
export const SEND_COMPLETION_MARGIN_MS = 1_000;

/**
 * The least the configuration must leave before the fence, besides an SMTP connect: loading the order and
 * setting the fence on a healthy Postgres, and rendering. Waiting for a pooled connection gets whatever is
 * left of the time before the fence, and ends as "not sent" when it runs out.
 */
export const MIN_TIME_BEFORE_FENCE_MS = 2_000;

/** How long the send may take before it passes the fence, given its timeout and the transport's deadline. */
export function timeBeforeFenceMs(sendTimeoutMs: number, deadlineAfterFenceMs: number): number {
  return sendTimeoutMs - deadlineAfterFenceMs - SEND_COMPLETION_MARGIN_MS;
}

export interface SendTimeSettings {
  sendTimeoutMs: number;
  overallTimeoutMs: number;
  /** SMTP opens its connection before the fence (MAIL_CONNECT_TIMEOUT_MS); an HTTP connect comes after it. */
  connectBeforeFenceMs: number;
}

/** The smallest SEND_ACTIVITY_TIMEOUT_MS that leaves room for everything before and after the fence. */
export function minimumSendTimeoutMs(settings: Omit<SendTimeSettings, 'sendTimeoutMs'>): number {
  return (
    settings.overallTimeoutMs +
    SEND_COMPLETION_MARGIN_MS +
    MIN_TIME_BEFORE_FENCE_MS +
    settings.connectBeforeFenceMs
  );
}
