// The adapters' shape, a leaf module so the facts table (mailProvider.ts) and the adapters need not import each other.
import type { ProviderLookupAdapter, VerificationFacts } from '../../verification/providerLookup';
import type { SendOutcomeTable } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';

export const MAIL_PROVIDER_NAMES = ['generic', 'sendgrid', 'postmark', 'resend', 'mailgun', 'ses'] as const;
export type MailProviderName = (typeof MAIL_PROVIDER_NAMES)[number];

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
  readonly statusTable: SendOutcomeTable;
  buildRequest(mail: OutgoingMail): ProviderRequest;
  /** The provider's id for an accepted message, or null when the 2xx did not carry a readable one. */
  readMessageId(headers: ResponseHeaders, body: string | null): string | null;
  /** Only a documented name: an error body's free text can echo the recipient. */
  readProviderError(status: number, body: string | null, headers?: ResponseHeaders): string | null;
  /** SES's SigV4, just before the request leaves; a failure here is not sent. */
  authorize?(request: ProviderRequest, target: { origin: string; path: string }): Promise<ProviderRequest>;
  /** Absent when the provider has no lookup by our send key. */
  readonly lookup?: ProviderLookupAdapter;
}

/** How long a provider dedupes requests that carry the same idempotency key, per its documentation. */
export interface ProviderIdempotency {
  header: string;
  documentedWindowMs: number;
}

export interface MailProviderFacts {
  /** Used when MAIL_API_BASE_URL is not set; null means the adopter must set it (the generic API). */
  defaultBaseUrl: string | null;
  idempotency: ProviderIdempotency | null;
  /** Null when it cannot verify (Resend needs not: its key makes retries safe). */
  verification: VerificationFacts | null;
}
