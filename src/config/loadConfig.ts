// Worker configuration, parsed and validated in one place. Pure: takes the environment as an argument and
// reports every problem at once, so an operator fixes a deployment in one go instead of one error per restart.
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';

export interface WorkerConfig {
  databaseUrl: string;
  temporal: { address: string; namespace: string; taskQueue: string };
  mailApi: {
    baseUrl: string;
    apiKey: string;
    connectTimeoutMs: number;
    headersTimeoutMs: number;
    overallTimeoutMs: number;
    connections: number;
  };
  mail: { from: string; replyTo: string | null; subject: string };
  workflow: OrderMailWorkflowSettings;
  worker: {
    shutdownGraceTimeMs: number;
    maxConcurrentActivityTaskExecutions: number;
    /** host:port for the Temporal runtime's Prometheus endpoint, or null for none. */
    metricsBindAddress: string | null;
    pgPoolMax: number;
    pgStatementTimeoutMs: number;
    /** Sends per second for the whole task queue, enforced by the Temporal server; null for no limit. */
    sendRateLimitPerSecond: number | null;
  };
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
  TEMPORAL_ADDRESS: 'localhost:7233',
  TEMPORAL_NAMESPACE: 'default',
  TEMPORAL_TASK_QUEUE: 'order-confirmation-mail',
  MAIL_FROM: 'shop@example.com',
  MAIL_SUBJECT: 'ご注文ありがとうございます',
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
  PG_STATEMENT_TIMEOUT_MS: 10_000,
} as const;

// Time the send activity keeps beyond the HTTP deadline, to render the mail and pass the fence first.
const SEND_TIMEOUT_MARGIN_MS = 5_000;

export function loadConfig(env: Record<string, string | undefined>): WorkerConfig {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const databaseUrl = read.url('DATABASE_URL', ['postgres:', 'postgresql:']);
  const mailBaseUrl = read.url('MAIL_API_BASE_URL', ['http:', 'https:']);
  const apiKey = read.required('MAIL_API_KEY');
  const overallTimeoutMs = read.positiveInt(
    'MAIL_OVERALL_TIMEOUT_MS',
    CONFIG_DEFAULTS.MAIL_OVERALL_TIMEOUT_MS,
  );
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

  if (sendTimeoutMs < overallTimeoutMs + SEND_TIMEOUT_MARGIN_MS) {
    problems.push(
      `SEND_ACTIVITY_TIMEOUT_MS (${sendTimeoutMs}) must be at least MAIL_OVERALL_TIMEOUT_MS + ${SEND_TIMEOUT_MARGIN_MS} ` +
        `(${overallTimeoutMs + SEND_TIMEOUT_MARGIN_MS}); otherwise Temporal times out sends whose HTTP call is still running.`,
    );
  }
  if (shutdownGraceTimeMs < sendTimeoutMs) {
    problems.push(
      `WORKER_SHUTDOWN_GRACE_MS (${shutdownGraceTimeMs}) must be at least SEND_ACTIVITY_TIMEOUT_MS (${sendTimeoutMs}), ` +
        'so a deploy lets sends in flight finish and be recorded.',
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
      address: read.optional('TEMPORAL_ADDRESS') ?? CONFIG_DEFAULTS.TEMPORAL_ADDRESS,
      namespace: read.optional('TEMPORAL_NAMESPACE') ?? CONFIG_DEFAULTS.TEMPORAL_NAMESPACE,
      taskQueue: read.optional('TEMPORAL_TASK_QUEUE') ?? CONFIG_DEFAULTS.TEMPORAL_TASK_QUEUE,
    },
    mailApi: {
      baseUrl: mailBaseUrl.replace(/\/+$/, ''),
      apiKey,
      connectTimeoutMs: read.positiveInt('MAIL_CONNECT_TIMEOUT_MS', CONFIG_DEFAULTS.MAIL_CONNECT_TIMEOUT_MS),
      headersTimeoutMs: read.positiveInt('MAIL_HEADERS_TIMEOUT_MS', CONFIG_DEFAULTS.MAIL_HEADERS_TIMEOUT_MS),
      overallTimeoutMs,
      connections: read.positiveInt('MAIL_CONNECTIONS', CONFIG_DEFAULTS.MAIL_CONNECTIONS),
    },
    mail: {
      from: read.optional('MAIL_FROM') ?? CONFIG_DEFAULTS.MAIL_FROM,
      replyTo: read.optional('MAIL_REPLY_TO'),
      subject: read.optional('MAIL_SUBJECT') ?? CONFIG_DEFAULTS.MAIL_SUBJECT,
    },
    workflow: {
      unknownOutcomePolicy: policy,
      sendTimeoutMs,
      maxSendAttempts: read.positiveInt('SEND_MAX_ATTEMPTS', CONFIG_DEFAULTS.SEND_MAX_ATTEMPTS),
      retryInitialIntervalMs,
      retryMaxIntervalMs,
    },
    worker: {
      shutdownGraceTimeMs,
      maxConcurrentActivityTaskExecutions: read.positiveInt(
        'WORKER_MAX_CONCURRENT_ACTIVITIES',
        CONFIG_DEFAULTS.WORKER_MAX_CONCURRENT_ACTIVITIES,
      ),
      metricsBindAddress: read.hostPort('TEMPORAL_METRICS_BIND_ADDRESS'),
      pgPoolMax: read.positiveInt('PG_POOL_MAX', CONFIG_DEFAULTS.PG_POOL_MAX),
      pgStatementTimeoutMs: read.positiveInt(
        'PG_STATEMENT_TIMEOUT_MS',
        CONFIG_DEFAULTS.PG_STATEMENT_TIMEOUT_MS,
      ),
      sendRateLimitPerSecond: read.optionalPositiveNumber('MAIL_SEND_RATE_LIMIT_PER_SECOND'),
    },
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
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

  hostPort(name: string): string | null {
    const value = this.optional(name);
    if (value !== null && !/^[^\s:]+:[0-9]{1,5}$/.test(value)) {
      this.problems.push(
        `${name} must look like host:port, e.g. 0.0.0.0:9464 (got ${JSON.stringify(value)}).`,
      );
      return null;
    }
    return value;
  }
}
