// The worker's defaults, in one place: loadConfig falls back to them and .env.example lists them (a test holds
// the two to each other).
import { DEFAULT_MAIL_SIZE_LIMITS } from '../mail/mailSizeLimits';
import { DEFAULT_POSTMARK_MESSAGE_STREAM } from '../mail/providers/postmark';
import { DEFAULT_TEMPORAL_ADDRESS, DEFAULT_TEMPORAL_NAMESPACE } from './temporalConnection';

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
  // After an outage the next probe leaves within this; a 2-minute outage costs about 12 per destination.
  MAIL_WITNESS_PROBE_INTERVAL_MS: 10_000,
  SEND_ACTIVITY_TIMEOUT_MS: 60_000,
  UNKNOWN_OUTCOME_POLICY: 'assume-sent',
  SEND_MAX_ATTEMPTS: 8,
  SEND_RETRY_INITIAL_MS: 10_000,
  SEND_RETRY_MAX_MS: 600_000,
  WORKER_MAX_CONCURRENT_ACTIVITIES: 100,
  // Lookups are short reads over MAIL_VERIFY_CONNECTIONS; more at once would only queue on that pool.
  WORKER_MAX_CONCURRENT_LOOKUPS: 10,
  PG_POOL_MAX: 10,
  // A Prometheus scrape interval: more scrapes than that (several Prometheus, a dashboard) share one read.
  WORKER_GAUGE_REFRESH_INTERVAL_MS: 15_000,
  PG_STATEMENT_TIMEOUT_MS: 10_000,
  // Off only behind a pooler that cannot carry named statements (docs/production.md, "Postgres behind a pooler").
  PG_PREPARED_STATEMENTS: 'true',
  RECONCILE_GRACE_MS: 300_000,
  RECONCILE_LOOKBACK_MS: 604_800_000,
  MAIL_SECOND_LOOK_MAX_LATE_H: 24,
  RECONCILE_BATCH_SIZE: 100,
} as const;
