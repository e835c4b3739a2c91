// Picks the provider adapter the configuration names and puts it on the shared HTTP request path.

import { destinationOfMailApi } from '../evidence/destination';
import { createHttpMailTransport } from './httpMailTransport';
import { createGenericAdapter } from './providers/generic';
import { createMailgunAdapter } from './providers/mailgun';
import type { MailProviderAdapter, MailProviderName } from './providers/mailProvider';
import { createPostmarkAdapter } from './providers/postmark';
import { createResendAdapter } from './providers/resend';
import { createSendGridAdapter } from './providers/sendgrid';
import { createSmtpMailTransport, type SmtpConfig } from './smtp/smtpMailTransport';
import type { MailTransport } from './types';

/** The Mail API part of the worker's configuration (src/config/loadConfig.ts). Holds the API key. */
export interface MailApiConfig {
  provider: MailProviderName;
  /** MAIL_API_BASE_URL, or the provider's default (for Mailgun, the one of MAILGUN_REGION). */
  baseUrl: string;
  apiKey: string;
  /** Mailgun only: the sending domain in `/v3/{domain}/messages`. */
  mailgunDomain: string | null;
  /** Postmark only: the message stream (transactional streams are 'outbound' by default). */
  postmarkMessageStream: string;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  connections: number;
}

export function createProviderAdapter(config: MailApiConfig): MailProviderAdapter {
  const { apiKey } = config;
  switch (config.provider) {
    case 'generic':
      return createGenericAdapter({ apiKey });
    case 'sendgrid':
      return createSendGridAdapter({ apiKey });
    case 'postmark':
      return createPostmarkAdapter({ apiKey, messageStream: config.postmarkMessageStream });
    case 'resend':
      return createResendAdapter({ apiKey });
    case 'mailgun':
      return createMailgunAdapter({ apiKey, domain: config.mailgunDomain ?? '' });
  }
}

/** SMTP when the configuration has an SMTP part (MAIL_PROVIDER=smtp), else the provider's HTTP API. */
export function createMailTransport(config: MailApiConfig, smtp: SmtpConfig | null = null): MailTransport {
  if (smtp !== null) return createSmtpMailTransport(smtp);
  return createHttpMailTransport({
    ...config,
    adapter: createProviderAdapter(config),
    destination: destinationOfMailApi(config),
  });
}
