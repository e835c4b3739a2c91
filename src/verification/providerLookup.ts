// A provider lookup's request and answer shapes; it filters by the send key chosen before sending, so it
// works exactly when the send's own answer was lost. The facts are judged in src/evidence/evidenceRules.ts.
import type { LookupAnswer, LookupEntry, LookupQuery } from '../evidence/lookupAnswer';

export type { LookupAnswer, LookupQuery };

/** The request a lookup makes; always a GET. Auth included: never logged, never put into a result. */
export interface LookupRequest {
  path: string;
  headers: Record<string, string>;
}

export interface ProviderLookupAdapter {
  /** Asks where the attempt went (query.destination), never today's config. */
  buildRequest(query: LookupQuery): LookupRequest;
  /** Reads a 2xx or documented-permanent answer into facts, deciding nothing; the caller retries the rest. */
  readAnswer(
    status: number,
    body: string | null,
    query: LookupQuery,
    request: LookupRequest | { url: string },
  ): AdapterAnswer;
}

export interface LookupPage {
  kind: 'page';
  filteredBy: 'send' | 'order';
  entries: LookupEntry[];
  next: LookupRequest | { url: string; headers: Record<string, string> };
}

export type AdapterAnswer = Exclude<LookupAnswer, { kind: 'failed' }> | LookupPage;

/** How far a provider's evidence can be trusted, with sources: docs/providers.md, "The send key". */
export interface VerificationFacts {
  lookup: boolean;
  webhook: 'sendgrid' | 'mailgun' | 'ses' | null;
  /** Until then a "not found" proves nothing. */
  settleDelayMs: number;
  /** The floor of MAIL_VERIFY_SETTLE_DELAY_MS without an override reason; null where none is documented. */
  documentedSettleDelayMs: number | null;
  settleDelaySource: string;
  /** The least the provider keeps on any plan; null for webhook events (kept in our table). */
  retentionMs: number | null;
  retentionSource: string;
  /** docs/providers.md, "What a witness assumes, per provider". */
  witnessOrdering: 'taken-order' | 'trusted-after-settle-delay' | 'watermark';
  witnessOrderingSource: string;
}
