// What asking a provider "did you take this mail?" looks like, whatever the provider. An adapter
// (src/mail/providers/*) says how its lookup request is shaped and how its answer reads; the HTTP call itself
// (deadlines, body handling, what a failure means) is shared: src/verification/lookupClient.ts.
//
// A lookup filters by a value we chose BEFORE sending (the send key), so it works exactly when the send's own
// answer was lost. Pure types and helpers: the workflow, the activities and the tests share them.

/** What we look a send up by: the order, and the key every request of this send carried. */
export interface LookupQuery {
  orderId: string;
  /**
   * The send key: the same for every attempt of one send, new for an operator's deliberate re-send
   * (src/verification/sendKey.ts). A message carrying another key belongs to another send.
   */
  sendKey: string;
}

/** One lookup's answer, as the adapter read it. */
export type LookupAnswer =
  /** The provider holds a message with this send key: a request of this send was taken. */
  | { kind: 'found'; providerMessageId: string | null }
  /** The provider's log holds no such message (evidence of "not sent" only once the settle delay passed). */
  | { kind: 'not-found' }
  /** The provider answered, but not in a way that can decide: the feature is not on the account, an error. */
  | { kind: 'inconclusive'; reason: string };

/** The request a lookup makes; always a GET. Auth included: never logged, never put into a result. */
export interface LookupRequest {
  /** Below the base URL's path prefix, query string included; starts with '/'. */
  path: string;
  headers: Record<string, string>;
}

/** The lookup part of a provider adapter: its request and how to read its answer. */
export interface ProviderLookupAdapter {
  buildRequest(query: LookupQuery): LookupRequest;
  /**
   * Reads a final answer. Only 2xx and the statuses the provider documents as permanent (no access to the
   * feature, unknown domain) reach this; 5xx, 408, 429 and transport errors are retried by the caller.
   */
  readAnswer(status: number, body: string | null, query: LookupQuery): LookupAnswer;
}

/**
 * How far a provider's after-the-fact evidence can be trusted, per its documentation: the defaults of
 * MAIL_VERIFY_SETTLE_DELAY_MS and MAIL_VERIFY_RETENTION_MS. Pure data, read by configuration.
 */
export interface VerificationFacts {
  /** How the provider lets us find out: a lookup by our key, and/or signed event webhooks carrying it. */
  lookup: boolean;
  webhook: 'sendgrid' | 'mailgun' | null;
  /**
   * How long after a request its lookup (or its webhook) can be trusted to have seen it. Until then a "not
   * found" proves nothing, so the workflow waits this long on a durable timer before it asks.
   */
  settleDelayMs: number;
  /** Where the figure comes from, in words: the provider's page, or why we chose it when none is documented. */
  settleDelaySource: string;
  /**
   * How long the provider keeps what its lookup searches, at the least, on any plan; null when it does not
   * apply (webhook events are kept in our own table). Past it, "not found" proves nothing either.
   */
  retentionMs: number | null;
  retentionSource: string;
}

/** Whether a lookup made `sinceDispatchMs` after the send's last request may call "not found" not sent. */
export function notFoundIsEvidence(input: {
  /** Since this attempt's request left (the latest request with the key), on Postgres's clock. */
  sinceDispatchMs: number;
  /** Since the first request that carried the key (the oldest the provider must still remember). */
  sinceKeyFirstDispatchMs: number;
  settleDelayMs: number;
  retentionMs: number | null;
}): { evidence: true } | { evidence: false; why: string } {
  if (input.sinceDispatchMs < input.settleDelayMs) {
    return {
      evidence: false,
      why:
        `it was asked ${seconds(input.sinceDispatchMs)} s after the request, before the provider's settle delay ` +
        `(${seconds(input.settleDelayMs)} s): its log may not show the message yet`,
    };
  }
  if (input.retentionMs !== null && input.sinceKeyFirstDispatchMs > input.retentionMs) {
    return {
      evidence: false,
      why:
        `the first request with this key is ${seconds(input.sinceKeyFirstDispatchMs)} s old, beyond the ` +
        `provider's retention (${seconds(input.retentionMs)} s): it may have forgotten the message`,
    };
  }
  return { evidence: true };
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}
