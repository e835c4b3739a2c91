// Each provider's facts; the shared HTTP call is src/mail/httpMailTransport.ts, the adapter's shape providerTypes.ts.
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
  // No documented idempotency key (docs/providers.md, "Idempotency windows").
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
  resend: {
    defaultBaseUrl: 'https://api.resend.com',
    idempotency: { header: 'idempotency-key', documentedWindowMs: 24 * HOUR_MS },
    verification: null,
  },
  // The US base; MAILGUN_REGION=eu selects MAILGUN_BASE_URLS.eu. No idempotency key.
  mailgun: { defaultBaseUrl: MAILGUN_BASE_URLS.us, idempotency: null, verification: MAILGUN_VERIFICATION },
  // No idempotency key, no lookup: verified by its SNS events.
  ses: { defaultBaseUrl: null, idempotency: null, verification: SES_VERIFICATION },
});
