// Worker configuration, parsed and validated in one place. Pure: takes the environment as an argument and
// reports every problem at once, so an operator fixes a deployment in one go instead of one error per restart.
// The one exception: the Temporal connection reads the certificate and TOML files the environment names, so a
// wrong path is one of the problems reported at start-up.
import type { ReconcileSettings } from '../activities/reconcileActivities';
import type { MailApiConfig, SesSettings } from '../mail/createMailTransport';
import { readAwsCredentialSource } from '../mail/providers/awsCredentials';
import { sesConfigurationSetProblem, sesEndpoint, sesRegionProblem } from '../mail/providers/ses';
import { DEPLOYMENT_ID_PATTERN } from '../evidence/sendKey';
import { DEFAULT_MAIL_SIZE_LIMITS, type MailSizeLimits } from '../mail/mailSizeLimits';
import type { SmtpConfig } from '../mail/smtp/smtpMailTransport';
import { DEFAULT_POSTMARK_MESSAGE_STREAM } from '../mail/providers/postmark';
import {
  MAIL_PROVIDER_FACTS,
  MAILGUN_BASE_URLS,
  type MailgunRegion,
  type MailProviderName,
} from '../mail/providers/mailProvider';
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { IdempotencyRetrySettings, OrderMailWorkflowSettings } from '../shared/workflowSettings';
import type { TracingSettings } from '../tracing/tracing';
import { readVerificationConfig, type VerificationConfig } from '../verification/verificationConfig';
import type { HealthSettings } from '../db/providerHealth';
import { providerEnvView, readProviderList } from './providerList';
import {
  MIN_TIME_BEFORE_FENCE_MS,
  minimumSendTimeoutMs,
  SEND_COMPLETION_MARGIN_MS,
  type SendTimeSettings,
} from './sendTimeBudget';
import {
  DEFAULT_TEMPORAL_ADDRESS,
  DEFAULT_TEMPORAL_NAMESPACE,
  loadTemporalConnectionConfig,
  type TemporalConnectionConfig,
} from './temporalConnection';

export interface WorkerConfig {
  databaseUrl: string;
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    /** Address, TLS, API key and gRPC metadata from @temporalio/envconfig (src/config/temporalConnection.ts). */
    connection: TemporalConnectionConfig;
  };
  /** The first provider's (the only one's, without failover). Holds the API key: never log this object. */
  mailApi: MailApiConfig;
  /**
   * MAIL_PROVIDERS in order (src/config/providerList.ts), the first being `mailApi`, `mail` and `verification`
   * above: each with its own API settings, sender and verification. One entry without failover (and with SMTP).
   */
  providers: ProviderConfig[];
  /** When a failing provider is skipped by new attempts (MAIL_PROVIDER_SKIP_*, src/db/providerHealth.ts). */
  providerHealth: HealthSettings;
  /** Set when MAIL_PROVIDER=smtp: the worker then sends over SMTP and `mailApi` is not used. Holds the password. */
  smtp: SmtpConfig | null;
  mail: { from: string; replyTo: string | null; subject: string };
  /** How large one mail may get; an order over a limit is refused before sending (src/mail/mailSizeLimits.ts). */
  mailLimits: MailSizeLimits;
  /** How unknown outcomes are verified with the provider (MAIL_VERIFY_*); null when they are not. */
  verification: VerificationConfig | null;
  /**
   * MAIL_DEPLOYMENT_ID: this deployment's name in every send key (src/mail/idempotencyKey.ts), so a staging
   * system with the same order ids on the same provider account is never taken for this one. Default: the
   * Temporal namespace.
   */
  deploymentId: string;
  /** OpenTelemetry traces over OTLP (src/tracing/tracing.ts); null when OTEL_EXPORTER_OTLP_ENDPOINT is unset. */
  tracing: TracingSettings | null;
  workflow: OrderMailWorkflowSettings;
  /** The reconciliation sweep's activities (src/activities/reconcileActivities.ts). */
  reconcile: ReconcileSettings;
  worker: {
    shutdownGraceTimeMs: number;
    maxConcurrentActivityTaskExecutions: number;
    /** host:port for the Temporal runtime's Prometheus endpoint, or null for none (or an internal one). */
    metricsBindAddress: string | null;
    /**
     * host:port of the worker's HTTP server (/metrics, /healthz, /readyz), or null for none. A bare port binds
     * loopback (127.0.0.1): other interfaces only where an address says so.
     */
    httpBindAddress: string | null;
    /** The gauges read from Postgres are computed at most once per this many ms (single flight). */
    gaugeRefreshIntervalMs: number;
    /** A workflow bundle made at build time (production image); null bundles the sources at start-up. */
    workflowBundlePath: string | null;
    pgPoolMax: number;
    pgStatementTimeoutMs: number;
    /** Sends per second for the whole task queue, enforced by the Temporal server; null for no limit. */
    sendRateLimitPerSecond: number | null;
  };
}

/** One provider of MAIL_PROVIDERS, with its own settings. Holds its API key: never log it. */
export interface ProviderConfig {
  name: MailProviderName;
  mailApi: MailApiConfig;
  mail: { from: string; replyTo: string | null; subject: string };
  verification: VerificationConfig | null;
  idempotency: IdempotencyRetrySettings | null;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'ERR_ORDER_MAIL_CONFIG';
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
  }
}

/** The defaults, also listed in .env.example. */
export const CONFIG_DEFAULTS = {
  TEMPORAL_ADDRESS: DEFAULT_TEMPORAL_ADDRESS,
  TEMPORAL_NAMESPACE: DEFAULT_TEMPORAL_NAMESPACE,
  TEMPORAL_TASK_QUEUE: 'order-confirmation-mail',
  OTEL_SERVICE_NAME: 'order-confirmation-mail-worker',
  OTEL_BSP_SCHEDULE_DELAY: 1_000,
  MAIL_PROVIDER: 'generic',
  MAIL_PROVIDER_SKIP_AFTER_FAILURES: 5,
  MAIL_PROVIDER_SKIP_FOR_MS: 30_000,
  SMTP_PORT: 587,
  SMTP_STARTTLS: 'require',
  SMTP_POOL_SIZE: 5,
  MAILGUN_REGION: 'us',
  POSTMARK_MESSAGE_STREAM: DEFAULT_POSTMARK_MESSAGE_STREAM,
  MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS: 3_600_000,
  MAIL_FROM: 'shop@example.com',
  MAIL_SUBJECT: 'ご注文ありがとうございます',
  MAIL_MAX_ORDER_ITEMS: DEFAULT_MAIL_SIZE_LIMITS.maxOrderItems,
  MAIL_MAX_RENDERED_BYTES: DEFAULT_MAIL_SIZE_LIMITS.maxRenderedBytes,
  MAIL_CONNECT_TIMEOUT_MS: 5_000,
  MAIL_HEADERS_TIMEOUT_MS: 30_000,
  MAIL_OVERALL_TIMEOUT_MS: 40_000,
  MAIL_CONNECTIONS: 10,
  SEND_ACTIVITY_TIMEOUT_MS: 60_000,
  UNKNOWN_OUTCOME_POLICY: 'assume-sent',
  SEND_MAX_ATTEMPTS: 8,
  SEND_RETRY_INITIAL_MS: 10_000,
  SEND_RETRY_MAX_MS: 600_000,
  WORKER_MAX_CONCURRENT_ACTIVITIES: 100,
  PG_POOL_MAX: 10,
  // A Prometheus scrape interval: more scrapes than that (several Prometheus, a dashboard) share one read.
  WORKER_GAUGE_REFRESH_INTERVAL_MS: 15_000,
  PG_STATEMENT_TIMEOUT_MS: 10_000,
  RECONCILE_GRACE_MS: 300_000,
  RECONCILE_LOOKBACK_MS: 604_800_000,
  RECONCILE_BATCH_SIZE: 100,
} as const;

/** The OpenTelemetry SDK's standard variables, the four this worker reads: on with an endpoint, else off. */
function readTracingSettings(read: EnvReader): TracingSettings | null {
  const endpoint = read.optionalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']);
  const serviceName = read.optional('OTEL_SERVICE_NAME') ?? CONFIG_DEFAULTS.OTEL_SERVICE_NAME;
  const zipkinEndpoint = read.optionalUrl('OTEL_EXPORTER_ZIPKIN_ENDPOINT', ['http:', 'https:']);
  const batchDelayMs = read.positiveInt('OTEL_BSP_SCHEDULE_DELAY', CONFIG_DEFAULTS.OTEL_BSP_SCHEDULE_DELAY);
  return endpoint === null ? null : { endpoint, serviceName, zipkinEndpoint, batchDelayMs };
}

export function loadConfig(env: Record<string, string | undefined>): WorkerConfig {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const databaseUrl = read.url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const list = readProviderList(env, problems, CONFIG_DEFAULTS.MAIL_PROVIDER);
  const chosenProvider = list[0]!;
  const useSmtp = chosenProvider === 'smtp';
  // With SMTP the HTTP part is not used; it is still filled (as generic, nothing required) to keep one shape.
  const parts = list.map((name, index) =>
    readProviderPart(env, name === 'smtp' ? 'generic' : name, index, { problems, useSmtp }),
  );
  const first = parts[0]!;
  const idempotency = first.idempotency;
  // MAIL_VERIFY_* (src/verification/verificationConfig.ts, listed in .env.example).
  const verification = useSmtp ? readVerificationConfig(env, 'smtp', problems) : first.verification;
  const overallTimeoutMs = read.positiveInt(
    'MAIL_OVERALL_TIMEOUT_MS',
    CONFIG_DEFAULTS.MAIL_OVERALL_TIMEOUT_MS,
  );
  const connectTimeoutMs = read.positiveInt(
    'MAIL_CONNECT_TIMEOUT_MS',
    CONFIG_DEFAULTS.MAIL_CONNECT_TIMEOUT_MS,
  );
  const headersTimeoutMs = read.positiveInt(
    'MAIL_HEADERS_TIMEOUT_MS',
    CONFIG_DEFAULTS.MAIL_HEADERS_TIMEOUT_MS,
  );
  const smtp = useSmtp
    ? readSmtpConfig(read, problems, { connectTimeoutMs, headersTimeoutMs, overallTimeoutMs })
    : null;
  const sendTimeoutMs = read.positiveInt(
    'SEND_ACTIVITY_TIMEOUT_MS',
    CONFIG_DEFAULTS.SEND_ACTIVITY_TIMEOUT_MS,
  );
  const shutdownGraceTimeMs = read.positiveInt('WORKER_SHUTDOWN_GRACE_MS', sendTimeoutMs + 10_000);
  const retryInitialIntervalMs = read.positiveInt(
    'SEND_RETRY_INITIAL_MS',
    CONFIG_DEFAULTS.SEND_RETRY_INITIAL_MS,
  );
  const retryMaxIntervalMs = read.positiveInt('SEND_RETRY_MAX_MS', CONFIG_DEFAULTS.SEND_RETRY_MAX_MS);
  const policy = read.oneOf<UnknownOutcomePolicy>(
    'UNKNOWN_OUTCOME_POLICY',
    UNKNOWN_OUTCOME_POLICIES,
    CONFIG_DEFAULTS.UNKNOWN_OUTCOME_POLICY,
  );

  const sendTimeProblem = sendTimeoutProblem({
    sendTimeoutMs,
    overallTimeoutMs,
    connectBeforeFenceMs: useSmtp ? connectTimeoutMs : 0,
  });
  if (sendTimeProblem !== null) problems.push(sendTimeProblem);
  if (shutdownGraceTimeMs < sendTimeoutMs) {
    problems.push(
      `WORKER_SHUTDOWN_GRACE_MS (${shutdownGraceTimeMs}) must be at least SEND_ACTIVITY_TIMEOUT_MS (${sendTimeoutMs}), ` +
        'so a deploy lets sends in flight finish and be recorded.',
    );
  }
  const reconcileBatchSize = read.positiveInt('RECONCILE_BATCH_SIZE', CONFIG_DEFAULTS.RECONCILE_BATCH_SIZE);
  if (reconcileBatchSize > 1_000) {
    problems.push(
      `RECONCILE_BATCH_SIZE (${reconcileBatchSize}) must be at most 1000, so one batch stays one short activity.`,
    );
  }
  for (const part of parts) {
    const window = part.idempotency;
    if (window !== null && window.safetyMarginMs + sendTimeoutMs >= window.windowMs) {
      const name =
        parts.length > 1 ? `${part.name.toUpperCase()}_IDEMPOTENCY_WINDOW_MS` : 'MAIL_IDEMPOTENCY_WINDOW_MS';
      problems.push(
        `MAIL_IDEMPOTENCY_SAFETY_MARGIN_MS (${window.safetyMarginMs}) plus SEND_ACTIVITY_TIMEOUT_MS (${sendTimeoutMs}) ` +
          `must be less than ${name} (${window.windowMs}); set the window to 0 to turn retries under the key off.`,
      );
    }
  }
  const transportSettings = {
    connectTimeoutMs,
    headersTimeoutMs,
    overallTimeoutMs,
    connections: read.positiveInt('MAIL_CONNECTIONS', CONFIG_DEFAULTS.MAIL_CONNECTIONS),
  };
  const connection = read.temporalConnection();
  const deploymentId =
    read.optional('MAIL_DEPLOYMENT_ID') ?? connection.namespace.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63);
  if (!DEPLOYMENT_ID_PATTERN.test(deploymentId)) {
    problems.push(
      `MAIL_DEPLOYMENT_ID must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit ` +
        `(got ${JSON.stringify(deploymentId)}).`,
    );
  }
  if (retryMaxIntervalMs < retryInitialIntervalMs) {
    problems.push(
      `SEND_RETRY_MAX_MS (${retryMaxIntervalMs}) must be at least SEND_RETRY_INITIAL_MS (${retryInitialIntervalMs}).`,
    );
  }

  const config: WorkerConfig = {
    databaseUrl,
    temporal: {
      address: connection.connectionOptions.address,
      namespace: connection.namespace,
      taskQueue: read.optional('TEMPORAL_TASK_QUEUE') ?? CONFIG_DEFAULTS.TEMPORAL_TASK_QUEUE,
      connection,
    },
    mailApi: { ...first.mailApi, ...transportSettings },
    providers: parts.map((part) => ({ ...part, mailApi: { ...part.mailApi, ...transportSettings } })),
    providerHealth: {
      skipAfterFailures: read.positiveInt(
        'MAIL_PROVIDER_SKIP_AFTER_FAILURES',
        CONFIG_DEFAULTS.MAIL_PROVIDER_SKIP_AFTER_FAILURES,
      ),
      skipForMs: read.positiveInt('MAIL_PROVIDER_SKIP_FOR_MS', CONFIG_DEFAULTS.MAIL_PROVIDER_SKIP_FOR_MS),
    },
    smtp,
    mail: first.mail,
    mailLimits: {
      maxOrderItems: read.positiveInt('MAIL_MAX_ORDER_ITEMS', CONFIG_DEFAULTS.MAIL_MAX_ORDER_ITEMS),
      maxRenderedBytes: read.positiveInt('MAIL_MAX_RENDERED_BYTES', CONFIG_DEFAULTS.MAIL_MAX_RENDERED_BYTES),
    },
    verification,
    deploymentId,
    tracing: readTracingSettings(read),
    workflow: {
      unknownOutcomePolicy: policy,
      sendTimeoutMs,
      maxSendAttempts: read.positiveInt('SEND_MAX_ATTEMPTS', CONFIG_DEFAULTS.SEND_MAX_ATTEMPTS),
      retryInitialIntervalMs,
      retryMaxIntervalMs,
      idempotency,
      verification:
        verification === null
          ? null
          : {
              settleDelayMs: verification.settleDelayMs,
              lookupTimeoutMs: verification.lookupTimeoutMs,
              deadlineMs: verification.deadlineMs,
            },
    },
    reconcile: {
      graceMs: read.positiveInt('RECONCILE_GRACE_MS', CONFIG_DEFAULTS.RECONCILE_GRACE_MS),
      lookbackMs: read.positiveInt('RECONCILE_LOOKBACK_MS', CONFIG_DEFAULTS.RECONCILE_LOOKBACK_MS),
      confirmedSince: read.isoInstant('RECONCILE_CONFIRMED_SINCE'),
      batchSize: reconcileBatchSize,
    },
    worker: {
      shutdownGraceTimeMs,
      maxConcurrentActivityTaskExecutions: read.positiveInt(
        'WORKER_MAX_CONCURRENT_ACTIVITIES',
        CONFIG_DEFAULTS.WORKER_MAX_CONCURRENT_ACTIVITIES,
      ),
      metricsBindAddress: read.hostPort('TEMPORAL_METRICS_BIND_ADDRESS'),
      httpBindAddress: read.hostPort('WORKER_HTTP_BIND_ADDRESS', { loopbackForBarePort: true }),
      gaugeRefreshIntervalMs: read.positiveInt(
        'WORKER_GAUGE_REFRESH_INTERVAL_MS',
        CONFIG_DEFAULTS.WORKER_GAUGE_REFRESH_INTERVAL_MS,
      ),
      workflowBundlePath: read.optional('WORKFLOW_BUNDLE_PATH'),
      pgPoolMax: read.positiveInt('PG_POOL_MAX', CONFIG_DEFAULTS.PG_POOL_MAX),
      pgStatementTimeoutMs: read.positiveInt(
        'PG_STATEMENT_TIMEOUT_MS',
        CONFIG_DEFAULTS.PG_STATEMENT_TIMEOUT_MS,
      ),
      sendRateLimitPerSecond: read.optionalPositiveNumber('MAIL_SEND_RATE_LIMIT_PER_SECOND'),
    },
  };
  // Several providers read the same shared variables (MAIL_FROM, MAILGUN_REGION…): each problem once.
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return config;
}

/**
 * The send activity's timeout must hold everything before the dispatch fence (loading the order, rendering,
 * waiting for a connection, for SMTP connecting and logging in) and the transport's whole deadline after it,
 * plus a margin to report the result (src/config/sendTimeBudget.ts). Too short, and Temporal would time out
 * sends whose request is still running, recording an unknown for a mail that may never have left.
 */
function sendTimeoutProblem(settings: SendTimeSettings): string | null {
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

/**
 * One provider's own settings, read through its view of the environment (src/config/providerList.ts), so the
 * problems name its own variables. With SMTP the HTTP part is filled as generic, nothing required.
 */
function readProviderPart(
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
  // MAIL_PROVIDER=ses: AWS_REGION, SES_CONFIGURATION_SET and the AWS credentials (src/mail/providers/ses.ts).
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

/**
 * The idempotency window the workflow relies on: MAIL_IDEMPOTENCY_WINDOW_MS, by default the provider's
 * documented one. Null when the provider has no keys or the window is set to 0 (keys are still sent, but an
 * unknown outcome goes straight to the policy).
 */
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
  const credentials = readAwsCredentialSource(env, problems);
  if (region === null || credentials === null) return null;
  return { region, configurationSet, credentials };
}

/** MAIL_PROVIDER=smtp: the relay, its TLS and credentials; the deadlines are the MAIL_* ones. */
function readSmtpConfig(
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

/** Reads variables and collects problems instead of throwing at the first. */
class EnvReader {
  constructor(
    private readonly env: Record<string, string | undefined>,
    private readonly problems: string[],
  ) {}

  optional(name: string): string | null {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  }

  required(name: string): string {
    const value = this.optional(name);
    if (value === null) this.problems.push(`${name} is required.`);
    return value ?? '';
  }

  url(name: string, protocols: string[]): string {
    const value = this.required(name);
    if (value === '') return value;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(`${name} must be a ${protocols.join(' or ')}// URL (got ${parsed.protocol}//…).`);
      }
    } catch {
      // The value itself may hold a password, so it is not echoed.
      this.problems.push(`${name} is not a valid URL.`);
    }
    return value;
  }

  /** Like `required`, but a problem never shows the value. */
  secret(name: string): string {
    const value = this.required(name);
    if (value !== '' && !/^[\x21-\x7e]+$/.test(value)) {
      this.problems.push(`${name} must be printable ASCII without spaces (the value is not shown).`);
    }
    return value;
  }

  optionalUrl(name: string, protocols: string[]): string | null {
    return this.optional(name) === null ? null : this.url(name, protocols);
  }

  /** `shop@example.com` or `Shop <shop@example.com>`, on one line. */
  mailbox(name: string): string | null {
    const value = this.headerText(name);
    if (value !== null && !/^(?:[^<>]*<)?[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+>?$/.test(value)) {
      this.problems.push(`${name} must be an address, optionally with a name: Shop <shop@example.com>.`);
    }
    return value;
  }

  /** Text that ends up in a mail header: no line breaks or other control characters. */
  headerText(name: string): string | null {
    const value = this.optional(name);
    // eslint-disable-next-line no-control-regex -- finding control characters is the point
    if (value !== null && /[\u0000-\u001f\u007f]/.test(value)) {
      this.problems.push(`${name} must not contain line breaks or other control characters.`);
    }
    return value;
  }

  nonNegativeInt(name: string, fallback: number): number {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      this.problems.push(`${name} must be an integer >= 0 (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return Number(value);
  }

  positiveInt(name: string, fallback: number): number {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!/^[0-9]+$/.test(value) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
      this.problems.push(`${name} must be a positive integer (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return Number(value);
  }

  optionalPositiveNumber(name: string): number | null {
    const value = this.optional(name);
    if (value === null) return null;
    if (!/^[0-9]+(\.[0-9]+)?$/.test(value) || Number(value) <= 0) {
      this.problems.push(`${name} must be a positive number, e.g. 10 or 0.5 (got ${JSON.stringify(value)}).`);
      return null;
    }
    return Number(value);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.optional(name);
    if (value === null) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)}).`);
      return fallback;
    }
    return value as T;
  }

  isoInstant(name: string): Date | null {
    const value = this.optional(name);
    if (value === null) return null;
    if (!/^\d{4}-\d{2}-\d{2}T[0-9:.]+(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
      this.problems.push(
        `${name} must be an ISO instant with a time zone, e.g. 2026-12-01T00:00:00+09:00 (got ${JSON.stringify(value)}).`,
      );
      return null;
    }
    return new Date(value);
  }

  /** The Temporal connection (envconfig): address, namespace, TLS files, API key, TOML profile. */
  temporalConnection(): TemporalConnectionConfig {
    try {
      return loadTemporalConnectionConfig(this.env);
    } catch (error) {
      this.problems.push(error instanceof Error ? error.message : String(error));
      return loadTemporalConnectionConfig({});
    }
  }

  hostPort(name: string, options: { loopbackForBarePort?: boolean } = {}): string | null {
    const value = this.optional(name);
    if (value !== null && options.loopbackForBarePort === true && /^[0-9]{1,5}$/.test(value)) {
      return `127.0.0.1:${value}`;
    }
    if (value !== null && !/^[^\s:]+:[0-9]{1,5}$/.test(value)) {
      this.problems.push(
        `${name} must look like host:port, e.g. 0.0.0.0:9464 (got ${JSON.stringify(value)}).`,
      );
      return null;
    }
    return value;
  }
}
