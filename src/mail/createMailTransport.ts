// Picks the provider adapter the configuration names and puts it on the shared HTTP request path.

import { destinationOfMailApi, type SendDestination } from '../evidence/destination';
import { createHttpMailTransport, MailClientConfigError } from './httpMailTransport';
import { createGenericAdapter } from './providers/generic';
import { createMailgunAdapter } from './providers/mailgun';
import type { MailProviderAdapter, MailProviderName } from './providers/mailProvider';
import { createPostmarkAdapter } from './providers/postmark';
import { createResendAdapter } from './providers/resend';
import { createSendGridAdapter } from './providers/sendgrid';
import {
  awsCredentialIdentity,
  createAwsCredentialProvider,
  type AwsCredentialProvider,
  type AwsCredentialSource,
} from './providers/awsCredentials';
import { createSesAdapter } from './providers/ses';
import { createSmtpMailTransport, type SmtpConfig } from './smtp/smtpMailTransport';
import type { MailTransport } from './types';

/** The Mail API part of the worker's configuration (src/config/loadConfig.ts). Holds the API key. */
export interface MailApiConfig {
  provider: MailProviderName;
  /** MAIL_API_BASE_URL, or the provider's default (for Mailgun, the one of MAILGUN_REGION). */
  baseUrl: string;
  apiKey: string;
  mailgunDomain: string | null;
  /** Postmark only: the message stream (transactional streams are 'outbound' by default). */
  postmarkMessageStream: string;
  ses?: SesSettings | null;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  connections: number;
}

export interface SesSettings {
  region: string;
  /** Its event destination publishes to the SNS topic the receiver takes. */
  configurationSet: string;
  /** The account its events name (mail.sendingAccountId). */
  accountId: string;
  /** Holds secrets (static keys, a container token): never log it. */
  credentials: AwsCredentialSource;
  /** Keys from somewhere else than `credentials` (tests); default: fetched from `credentials`. */
  credentialProvider?: AwsCredentialProvider;
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
    case 'ses': {
      const ses = config.ses;
      if (ses === undefined || ses === null) {
        throw new MailClientConfigError(
          'MAIL_PROVIDER=ses needs its SES settings (region, configuration set).',
        );
      }
      return createSesAdapter({
        region: ses.region,
        configurationSet: ses.configurationSet,
        credentials:
          ses.credentialProvider ?? createAwsCredentialProvider(ses.credentials, { region: ses.region }),
      });
    }
  }
}

export function destinationOfMailConfig(config: MailApiConfig): SendDestination {
  const ses = config.ses ?? null;
  return destinationOfMailApi({
    ...config,
    ses:
      ses === null
        ? null
        : {
            region: ses.region,
            configurationSet: ses.configurationSet,
            accountId: ses.accountId,
            credentialIdentity: awsCredentialIdentity(ses.credentials),
          },
  });
}

export function createMailTransport(config: MailApiConfig, smtp: SmtpConfig | null = null): MailTransport {
  if (smtp !== null) return createSmtpMailTransport(smtp);
  return createHttpMailTransport({
    ...config,
    adapter: createProviderAdapter(config),
    destination: destinationOfMailConfig(config),
  });
}
