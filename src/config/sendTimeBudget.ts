// How SEND_ACTIVITY_TIMEOUT_MS is shared out around the dispatch fence, for the config check and the send
// alike (docs/production.md, "The send activity's time"). Pure.

export const SEND_COMPLETION_MARGIN_MS = 1_000;

/** Loading, rendering and the fence on a healthy Postgres; a connection wait gets what is left. */
export const MIN_TIME_BEFORE_FENCE_MS = 2_000;

export function timeBeforeFenceMs(sendTimeoutMs: number, deadlineAfterFenceMs: number): number {
  return sendTimeoutMs - deadlineAfterFenceMs - SEND_COMPLETION_MARGIN_MS;
}

export interface SendTimeSettings {
  sendTimeoutMs: number;
  overallTimeoutMs: number;
  /** SMTP connects before the fence; HTTP after it. */
  connectBeforeFenceMs: number;
}

export function minimumSendTimeoutMs(settings: Omit<SendTimeSettings, 'sendTimeoutMs'>): number {
  return (
    settings.overallTimeoutMs +
    SEND_COMPLETION_MARGIN_MS +
    MIN_TIME_BEFORE_FENCE_MS +
    settings.connectBeforeFenceMs
  );
}
