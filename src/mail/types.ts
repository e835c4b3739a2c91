import type { SendDestination } from '../evidence/destination';
import type { SendResult } from '../shared/mailOutcome';

/** One rendered mail, ready for a transport. Holds personal data: never put it in workflow history or logs. */
export interface OutgoingMail {
  /** The order this mail confirms; providers get it as metadata so a message can be traced back. */
  orderId: string;
  to: string;
  from: string;
  replyTo: string | null;
  subject: string;
  /** The plain-text part. */
  text: string;
  /** The HTML part, every value escaped by the template engine (src/mail/template/mailTemplates.ts). */
  html: string;
  /**
   * The key a provider that dedupes by key gets (src/mail/idempotencyKey.ts), from the claim: the same for
   * every automatic attempt, new for an operator's re-send. Required by such providers (Resend).
   */
  idempotencyKey?: string;
}

/**
 * Where a transport and the send activity meet at the dispatch fence (docs/design.md §4 rule 2). The transport
 * first gets hold of a connection (a pooled SMTP session, connected and authenticated; one of the HTTP
 * pool's connection slots), then calls `passFence()`, and makes its request only once that resolved. If
 * `passFence()` throws, the transport makes no request, gives the connection back and rethrows it.
 */
export interface DispatchGate {
  /**
   * `performance.now()` by which the fence must be passed. Until then the transport may wait for a
   * connection; after it, it gives up without a request: a "not sent" result.
   */
  passFenceBy: number;
  passFence(): Promise<void>;
}

/**
 * Sends one mail and classifies what happened. It never throws for anything the network or the provider did:
 * every such event becomes a SendResult. It throws only for programming errors and for whatever the gate's
 * `passFence()` threw.
 */
export interface MailTransport {
  /** The longest everything after the fence may take (MAIL_OVERALL_TIMEOUT_MS): the request's whole deadline. */
  readonly deadlineAfterFenceMs: number;
  /**
   * Where this transport's requests go (provider, origin, domain or stream, a fingerprint of the key), which
   * the dispatch fence records with each attempt (src/evidence/destination.ts). Absent for a fake.
   */
  readonly destination?: SendDestination;
  /** Without a gate (tools, tests): no fence, and a connection is waited for at most the overall deadline. */
  send(mail: OutgoingMail, gate?: DispatchGate): Promise<SendResult>;
  close(): Promise<void>;
}

/** The gate of a send without a fence: it may wait for a connection for `waitMs`, then sends. */
export function openGate(waitMs: number): DispatchGate {
  return { passFenceBy: performance.now() + waitMs, passFence: async () => undefined };
}

/** The not-sent result of a send that got no connection before its fence deadline. */
export function noConnectionInTime(what: string, waitedMs: number): SendResult {
  return {
    outcome: 'not_sent',
    httpStatus: null,
    errorCode: 'CONNECTION_WAIT_TIMEOUT',
    reason: `no free ${what} within the ${Math.round(waitedMs)} ms the send's timeout leaves before the dispatch fence; nothing was sent`,
    retryAfterMs: null,
  };
}
