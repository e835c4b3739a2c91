// The shape every mail provider adapter has, and the facts configuration knows of each provider. A leaf: the
// adapters implement these, and the table of facts (mailProvider.ts) imports the adapters, so the types cannot
// live there without each adapter importing the table back.
import type { ProviderLookupAdapter, VerificationFacts } from '../../verification/providerLookup';
import type { SendOutcomeTable } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';

export const MAIL_PROVIDER_NAMES = ['generic', 'sendgrid', 'postmark', 'resend', 'mailgun', 'ses'] as const;
export type MailProviderName = (typeof MAIL_PROVIDER_NAMES)[number];

/** Response headers as undici gives them (lower-case names). */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface ProviderRequest {
  /** Below the base URL's path prefix; starts with '/'. */
  path: string;
  /** Auth included. Never logged, never put into a result. */
  headers: Record<string, string>;
  body: string;
}

export interface MailProviderAdapter {
  readonly name: MailProviderName;
  /** Which statuses (and documented error names) are rejected, not-sent or unknown for this provider. */
  readonly statusTable: SendOutcomeTable;
  buildRequest(mail: OutgoingMail): ProviderRequest;
  /** The provider's id for an accepted message, or null when the 2xx did not carry a readable one. */
  readMessageId(headers: ResponseHeaders, body: string | null): string | null;
  /**
   * The provider's documented name for a non-2xx answer (e.g. Resend's `invalid_idempotent_request`), or
   * null. Only names from the provider's documented list are returned: an error body's free text can echo
   * the recipient, so it never leaves the adapter.
   */
  readProviderError(status: number, body: string | null, headers?: ResponseHeaders): string | null;
  /**
   * Signs the request just before it leaves (SES's SigV4, which covers the host, the path and the time), with
   * credentials that may have to be fetched; absent for a provider whose key is a plain header. A failure here
   * is before any request: not sent.
   */
  authorize?(request: ProviderRequest, target: { origin: string; path: string }): Promise<ProviderRequest>;
  /**
   * How to ask the provider afterwards whether it took a send, by the send key the request carried
   * (src/verification/providerLookup.ts); absent when the provider has no such lookup.
   */
  readonly lookup?: ProviderLookupAdapter;
}

/** How long a provider dedupes requests that carry the same idempotency key, per its documentation. */
export interface ProviderIdempotency {
  /** The request header that carries the key. */
  header: string;
  documentedWindowMs: number;
}

/** Facts about each provider that configuration needs before any adapter exists. Pure data. */
export interface MailProviderFacts {
  /** Used when MAIL_API_BASE_URL is not set; null means the adopter must set it (the generic API). */
  defaultBaseUrl: string | null;
  idempotency: ProviderIdempotency | null;
  /**
   * How an unknown outcome can be verified with this provider afterwards (a lookup, signed webhooks), with the
   * documented settle delay and retention; null when it cannot (Resend needs not: its key makes retries safe).
   */
  verification: VerificationFacts | null;
}
