import type { SendDestination } from '../evidence/destination';
import type { SendResult } from '../shared/mailOutcome';

/** One rendered mail, ready for a transport. Holds personal data: never put it in workflow history or logs. */
export interface OutgoingMail {
  orderId: string;
  to: string;
  from: string;
  replyTo: string | null;
  subject: string;
  text: string;
  /** The HTML part, every value escaped by the template engine (src/mail/template/mailTemplates.ts). */
  html: string;
  /** From the claim: the same for every automatic attempt (docs/providers.md, "Idempotency windows"). */
  sendKey?: string;
}

/** The dispatch fence (docs/design.md §4 rule 2): connection first, then passFence(), then the request. */
export interface DispatchGate {
  /** `performance.now()` by which the fence must be passed, else "not sent". */
  passFenceBy: number;
  passFence(): Promise<void>;
}

/** Throws only for programming errors and what `passFence()` threw; all else is a SendResult. */
export interface MailTransport {
  /** The longest everything after the fence may take (MAIL_OVERALL_TIMEOUT_MS): the request's whole deadline. */
  readonly deadlineAfterFenceMs: number;
  /** What the dispatch fence records as where requests go; absent for a fake. */
  readonly destination?: SendDestination;
  /** Without a gate (tools, tests): no fence, and a connection is waited for at most the overall deadline. */
  send(mail: OutgoingMail, gate?: DispatchGate): Promise<SendResult>;
  close(): Promise<void>;
}

/** The gate of a send without a fence: it may wait for a connection for `waitMs`, then sends. */
export function openGate(waitMs: number): DispatchGate {
  return { passFenceBy: performance.now() + waitMs, passFence: async () => undefined };
}

export function noConnectionInTime(what: string, waitedMs: number): SendResult {
  return {
    outcome: 'not_sent',
    httpStatus: null,
    errorCode: 'CONNECTION_WAIT_TIMEOUT',
    reason: `no free ${what} within the ${Math.round(waitedMs)} ms the send's timeout leaves before the dispatch fence; nothing was sent`,
    retryAfterMs: null,
  };
}
