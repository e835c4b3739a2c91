// What makes one mail provider different from another, and nothing else: the request's shape and auth, where
// the provider puts its message id, which error names it documents, and its outcome table. The HTTP call
// itself (phase capture, deadlines, classification) is shared by all of them: src/mail/httpMailTransport.ts.
// This file holds each provider's facts; the adapter's shape is providerTypes.ts.
import { GENERIC_VERIFICATION } from './generic';
import { MAILGUN_VERIFICATION } from './mailgun';
import { POSTMARK_VERIFICATION } from './postmark';
import { SENDGRID_VERIFICATION } from './sendgrid';
import { SES_VERIFICATION } from './ses';
import type { MailProviderFacts, MailProviderName } from './providerTypes';

export {
  MAIL_PROVIDER_NAMES,
  type MailProviderAdapter,
  type MailProviderFacts,
  type MailProviderName,
  type ProviderIdempotency,
  type ProviderRequest,
  type ResponseHeaders,
} from './providerTypes';

export const MAILGUN_BASE_URLS = { us: 'https://api.mailgun.net', eu: 'https://api.eu.mailgun.net' } as const;
export type MailgunRegion = keyof typeof MAILGUN_BASE_URLS;

const HOUR_MS = 60 * 60 * 1000;

export const MAIL_PROVIDER_FACTS: Readonly<Record<MailProviderName, MailProviderFacts>> = Object.freeze({
  generic: { defaultBaseUrl: null, idempotency: null, verification: GENERIC_VERIFICATION },
  // No documented idempotency key (docs/providers.md, "Idempotency windows"); its custom_args only help match
  // webhook events later.
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
