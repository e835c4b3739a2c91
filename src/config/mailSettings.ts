// The mail part of the worker's configuration: each provider's settings, SES, SMTP, the send timeout check.
import type { MailApiConfig, SesSettings } from '../mail/createMailTransport';
import { readAwsCredentialSource } from '../mail/providers/awsCredentials';
import { sesConfigurationSetProblem, sesEndpoint, sesRegionProblem } from '../mail/providers/ses';
import type { SmtpConfig } from '../mail/smtp/smtpMailTransport';
import {
  MAIL_PROVIDER_FACTS,
  MAILGUN_BASE_URLS,
  type MailgunRegion,
  type MailProviderName,
} from '../mail/providers/mailProvider';
import type { IdempotencyRetrySettings } from '../shared/workflowSettings';
import { readVerificationConfig } from '../verification/verificationConfig';
import { providerEnvView } from './providerList';
import {
  MIN_TIME_BEFORE_FENCE_MS,
  minimumSendTimeoutMs,
  SEND_COMPLETION_MARGIN_MS,
  type SendTimeSettings,
} from './sendTimeBudget';
import { CONFIG_DEFAULTS } from './configDefaults';
import { EnvReader } from './envReader';
import type { ProviderConfig } from './workerConfig';

/** Too short a send timeout records unknowns for mails that may never have left (docs/production.md). */
export function sendTimeoutProblem(settings: SendTimeSettings): string | null {
  const minimum = minimumSendTimeoutMs(settings);
  if (settings.sendTimeoutMs >= minimum) return null;
  const smtpPart =
    settings.connectBeforeFenceMs > 0
      ? ` + MAIL_CONNECT_TIMEOUT_MS (${settings.connectBeforeFenceMs}, SMTP connects before the fence)`
      : '';
  return (
    `SEND_ACTIVITY_TIMEOUT_MS (${settings.sendTimeoutMs}) must be at least ${minimum}: MAIL_OVERALL_TIMEOUT_MS ` +
    `(${settings.overallTimeoutMs}, everything after the dispatch fence) + ${SEND_COMPLETION_MARGIN_MS} (reporting the ` +
    `result) + ${MIN_TIME_BEFORE_FENCE_MS} (loading the order, rendering and setting the fence)${smtpPart}. Otherwise ` +
    'sends would give up before their fence, or Temporal would time out sends whose request is still running.'
  );
}

/** Read through the provider's view of the environment, so problems name its own variables. */
export function readProviderPart(
  env: Record<string, string | undefined>,
  provider: MailProviderName,
  index: number,
  context: { problems: string[]; useSmtp: boolean },
): Omit<ProviderConfig, 'mailApi'> & {
  mailApi: Omit<MailApiConfig, 'connectTimeoutMs' | 'headersTimeoutMs' | 'overallTimeoutMs' | 'connections'>;
} {
  const { useSmtp } = context;
  const view = providerEnvView(env, provider, index);
  const problems: string[] = [];
  const read = new EnvReader(view.env, problems);
  const mailgunRegion = read.oneOf<MailgunRegion>(
    'MAILGUN_REGION',
    ['us', 'eu'],
    CONFIG_DEFAULTS.MAILGUN_REGION,
  );
  // MAIL_PROVIDER=ses: AWS_REGION, SES_CONFIGURATION_SET, SES_ACCOUNT_ID and the AWS credentials (src/mail/providers/ses.ts).
  const ses = provider === 'ses' ? readSesSettings(read, view.env, problems) : null;
  const defaultBaseUrl =
    provider === 'mailgun'
      ? MAILGUN_BASE_URLS[mailgunRegion]
      : provider === 'ses'
        ? sesEndpoint(ses?.region ?? 'us-east-1')
        : MAIL_PROVIDER_FACTS[provider].defaultBaseUrl;
  // Required only for the generic API; for a SaaS provider it overrides the default (a region, the sandbox).
  const mailBaseUrl = useSmtp
    ? (read.optionalUrl('MAIL_API_BASE_URL', ['http:', 'https:']) ?? '')
    : defaultBaseUrl === null
      ? read.url('MAIL_API_BASE_URL', ['http:', 'https:'])
      : (read.optionalUrl('MAIL_API_BASE_URL', ['http:', 'https:']) ?? defaultBaseUrl);
  // SES signs with AWS credentials instead of an API key.
  const apiKey =
    useSmtp || provider === 'ses' ? (read.optional('MAIL_API_KEY') ?? '') : read.secret('MAIL_API_KEY');
  const mailgunDomain =
    provider === 'mailgun' ? read.required('MAILGUN_DOMAIN') : read.optional('MAILGUN_DOMAIN');
  const idempotency = readIdempotencySettings(read, provider, problems);
  const verification = useSmtp ? null : readVerificationConfig(view.env, provider, problems);
  const mail = {
    from: read.mailbox('MAIL_FROM') ?? CONFIG_DEFAULTS.MAIL_FROM,
    replyTo: read.mailbox('MAIL_REPLY_TO'),
    subject: read.headerText('MAIL_SUBJECT') ?? CONFIG_DEFAULTS.MAIL_SUBJECT,
  };
  context.problems.push(...problems.map((problem) => view.rename(problem)));
  return {
    name: provider,
    mailApi: {
      provider,
      baseUrl: mailBaseUrl.replace(/\/+$/, ''),
      apiKey,
      mailgunDomain,
      postmarkMessageStream:
        read.optional('POSTMARK_MESSAGE_STREAM') ?? CONFIG_DEFAULTS.POSTMARK_MESSAGE_STREAM,
      ses,
    },
    mail,
    verification,
    idempotency,
  };
}

/** The provider's documented window unless set; null (0, or no keys): unknowns go to the policy. */
function readIdempotencySettings(
  read: EnvReader,
  provider: MailProviderName,
  problems: string[],
): IdempotencyRetrySettings | null {
  const documented = MAIL_PROVIDER_FACTS[provider].idempotency?.documentedWindowMs ?? null;
  const windowMs = read.nonNegativeInt('MAIL_IDEMPOTENCY_WINDOW_MS', documented ?? 0);
  const safetyMarginMs = read.nonNegativeInt(
    'MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS',
    CONFIG_DEFAULTS.MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS,
  );
  if (documented === null) {
    if (windowMs > 0) {
      problems.push(
        `MAIL_IDEMPOTENCY_WINDOW_MS must be empty or 0 for MAIL_PROVIDER=${provider}: it has no idempotency key.`,
      );
    }
    return null;
  }
  if (windowMs > documented) {
    problems.push(
      `MAIL_IDEMPOTENCY_WINDOW_MS (${windowMs}) must not exceed the ${documented} ms that ${provider} documents.`,
    );
  }
  return windowMs === 0 ? null : { windowMs, safetyMarginMs };
}

const SES_ACCOUNT_ID = /^[0-9]{12}$/;

/** MAIL_PROVIDER=ses: the region (AWS_REGION, else AWS_DEFAULT_REGION), the configuration set, the credentials. */
function readSesSettings(
  read: EnvReader,
  env: Record<string, string | undefined>,
  problems: string[],
): SesSettings | null {
  const region = read.optional('AWS_REGION') ?? read.optional('AWS_DEFAULT_REGION');
  if (region === null) problems.push('MAIL_PROVIDER=ses needs AWS_REGION (or AWS_DEFAULT_REGION).');
  const regionProblem = region === null ? null : sesRegionProblem(region);
  if (regionProblem !== null) problems.push(`AWS_REGION must be ${regionProblem}.`);
  const configurationSet = read.required('SES_CONFIGURATION_SET');
  const setProblem = configurationSet === '' ? null : sesConfigurationSetProblem(configurationSet);
  if (setProblem !== null) problems.push(`SES_CONFIGURATION_SET must be ${setProblem}.`);
  // The account SES sends from: an SES event counts for an attempt only when it names it (src/evidence/).
  const accountId = read.required('SES_ACCOUNT_ID');
  if (accountId !== '' && !SES_ACCOUNT_ID.test(accountId)) {
    problems.push(
      `SES_ACCOUNT_ID must be the 12-digit AWS account id SES sends from (got ${JSON.stringify(accountId)}).`,
    );
  }
  const credentials = readAwsCredentialSource(env, problems);
  if (region === null || credentials === null) return null;
  return { region, configurationSet, accountId, credentials };
}

/** MAIL_PROVIDER=smtp: the relay, its TLS and credentials; the deadlines are the MAIL_* ones. */
export function readSmtpConfig(
  read: EnvReader,
  problems: string[],
  deadlines: { connectTimeoutMs: number; headersTimeoutMs: number; overallTimeoutMs: number },
): SmtpConfig {
  const host = read.required('SMTP_HOST');
  const secure = read.oneOf('SMTP_SECURE', ['true', 'false'], 'false') === 'true';
  const port = read.positiveInt('SMTP_PORT', secure ? 465 : CONFIG_DEFAULTS.SMTP_PORT);
  if (port > 65_535) problems.push(`SMTP_PORT must be at most 65535 (got ${port}).`);
  const starttls = read.oneOf<SmtpConfig['starttls']>(
    'SMTP_STARTTLS',
    ['require', 'opportunistic', 'off'],
    CONFIG_DEFAULTS.SMTP_STARTTLS,
  );
  const user = read.optional('SMTP_USER');
  const password = read.optional('SMTP_PASSWORD');
  if ((user === null) !== (password === null)) {
    problems.push('SMTP_USER and SMTP_PASSWORD go together: set both (AUTH) or neither (no AUTH).');
  }
  if (user !== null && !secure && starttls !== 'require') {
    problems.push(
      'SMTP_USER is set but the session may be unencrypted: set SMTP_SECURE=true or SMTP_STARTTLS=require.',
    );
  }
  return {
    host,
    port,
    secure,
    starttls,
    user,
    password,
    poolSize: read.positiveInt('SMTP_POOL_SIZE', CONFIG_DEFAULTS.SMTP_POOL_SIZE),
    connectTimeoutMs: deadlines.connectTimeoutMs,
    replyTimeoutMs: deadlines.headersTimeoutMs,
    overallTimeoutMs: deadlines.overallTimeoutMs,
  };
}
