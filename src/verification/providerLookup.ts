// What asking a provider "did you take this mail?" looks like, whatever the provider. An adapter
// (src/mail/providers/*) says how its lookup request is shaped and reads its answer into facts
// (src/evidence/lookupAnswer.ts); the HTTP call itself (deadlines, body handling, what a failure means) is
// shared: src/verification/lookupClient.ts. What the facts mean is decided in src/evidence/evidenceRules.ts.
//
// A lookup filters by a value we chose BEFORE sending (the send key), so it works exactly when the send's own
// answer was lost. Pure types: the workflow, the activities and the tests share them.
import type { LookupAnswer, LookupEntry, LookupQuery } from '../evidence/lookupAnswer';

export type { LookupAnswer, LookupQuery };

/** The request a lookup makes; always a GET. Auth included: never logged, never put into a result. */
export interface LookupRequest {
  /** Below the base URL's path prefix, query string included; starts with '/'. */
  path: string;
  headers: Record<string, string>;
}

/** The lookup part of a provider adapter: its request and how to read its answer. */
export interface ProviderLookupAdapter {
  /** Asks where the attempt went: query.destination (its origin is the caller's business), never today's config. */
  buildRequest(query: LookupQuery): LookupRequest;
  /**
   * Reads a final answer into facts, deciding nothing. Only 2xx and the statuses the provider documents as
   * permanent (no access to the feature, unknown domain) reach this; 5xx, 408, 429 and transport errors are
   * retried by the caller. An answer that has more behind it is a `page` naming the next request; the lookup
   * client reads every page (up to MAX_LOOKUP_PAGES) before the entries are judged.
   */
  readAnswer(
    status: number,
    body: string | null,
    query: LookupQuery,
    /** The request this answers (the first, or a page's next). */
    request: LookupRequest | { url: string },
  ): AdapterAnswer;
}

/** One page of a paged answer: its entries, and where the next page is (a request, or the provider's URL). */
export interface LookupPage {
  kind: 'page';
  filteredBy: 'send' | 'order';
  entries: LookupEntry[];
  next: LookupRequest | { url: string; headers: Record<string, string> };
}

export type AdapterAnswer = Exclude<LookupAnswer, { kind: 'failed' }> | LookupPage;

/**
 * How far a provider's after-the-fact evidence can be trusted, per its documentation: the defaults of
 * MAIL_VERIFY_SETTLE_DELAY_MS and MAIL_VERIFY_RETENTION_MS. Pure data, read by configuration.
 */
export interface VerificationFacts {
  /** How the provider lets us find out: a lookup by our key, and/or signed event webhooks carrying it. */
  lookup: boolean;
  webhook: 'sendgrid' | 'mailgun' | 'ses' | null;
  /**
   * How long after a request its lookup (or its webhook) can be trusted to have seen it. Until then a "not
   * found" proves nothing, so the workflow waits this long on a durable timer before it asks.
   */
  settleDelayMs: number;
  /**
   * The provider's own documented figure for that lag, below which MAIL_VERIFY_SETTLE_DELAY_MS is refused at
   * start unless MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON says why; null where the provider documents none.
   */
  documentedSettleDelayMs: number | null;
  /** Where the figure comes from, in words: the provider's page, or why we chose it when none is documented. */
  settleDelaySource: string;
  /**
   * How long the provider keeps what its lookup searches, at the least, on any plan; null when it does not
   * apply (webhook events are kept in our own table). Past it, "not found" proves nothing either.
   */
  retentionMs: number | null;
  retentionSource: string;
  /**
   * What order of the lookup the freshness witness assumes (src/evidence/freshnessCheck.ts, WitnessOrdering;
   * docs/providers.md, "What a witness assumes"): 'taken-order'; 'trusted-after-settle-delay', where events may
   * become visible out of order until they are a settle delay old (whose default is the documented figure);
   * or 'watermark', where the answer says up to when it is complete.
   */
  witnessOrdering: 'taken-order' | 'trusted-after-settle-delay' | 'watermark';
  witnessOrderingSource: string;
}
