// What makes one mail provider different from another, and nothing else: the request's shape and auth, where
// the provider puts its message id, which error names it documents, and its outcome table. The HTTP call
// itself (phase capture, deadlines, classification) is shared by all of them: src/mail/httpMailTransport.ts.

import type { ProviderLookupAdapter, VerificationFacts } from '../../verification/providerLookup';
import type { SendOutcomeTable } from '../sendOutcomeTable';
import type { OutgoingMail } from '../types';
import { GENERIC_VERIFICATION } from './generic';
import { MAILGUN_VERIFICATION } from './mailgun';
import { POSTMARK_VERIFICATION } from './postmark';
import { SENDGRID_VERIFICATION } from './sendgrid';
import { SES_VERIFICATION } from './ses';

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

export const MAILGUN_BASE_URLS = { us: 'https://api.mailgun.net', eu: 'https://api.eu.mailgun.net' } as const;
export type MailgunRegion = keyof typeof MAILGUN_BASE_URLS;

const HOUR_MS = 60 * 60 * 1000;

export const MAIL_PROVIDER_FACTS: Readonly<Record<MailProviderName, MailProviderFacts>> = Object.freeze({
  generic: { defaultBaseUrl: null, idempotency: null, verification: GENERIC_VERIFICATION },
  // No documented idempotency key (research note §7; custom_args only help match webhook events later).
  sendgrid: {
    defaultBaseUrl: 'https://api.sendgrid.com',
    idempotency: null,
    verification: SENDGRID_VERIFICATION,
  },
  // Postmark's support article "What is an Idempotency Key?" says it is not supported.
  postmark: {
    defaultBaseUrl: 'https://api.postmarkapp.com',
    idempotency: null,
    verification: POSTMARK_VERIFICATION,
  },
  // resend.com/docs/dashboard/emails/idempotency-keys: `Idempotency-Key`, up to 256 characters, kept 24 h.
  // Its key settles an unknown outcome by retrying, so nothing needs to be looked up.
  resend: {
    defaultBaseUrl: 'https://api.resend.com',
    idempotency: { header: 'idempotency-key', documentedWindowMs: 24 * HOUR_MS },
    verification: null,
  },
  // The US base; MAILGUN_REGION=eu selects MAILGUN_BASE_URLS.eu. No idempotency key.
  mailgun: { defaultBaseUrl: MAILGUN_BASE_URLS.us, idempotency: null, verification: MAILGUN_VERIFICATION },
  // The endpoint is the region's (sesEndpoint in ./ses.ts, from AWS_REGION). No idempotency key, no lookup:
  // verified by the events its configuration set publishes through SNS.
  ses: { defaultBaseUrl: null, idempotency: null, verification: SES_VERIFICATION },
});
