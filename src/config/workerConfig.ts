// What a worker runs with, once loadConfig (src/config/loadConfig.ts) has read and checked the environment.
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { ReconcileSettings } from '../activities/reconcileTypes';
import type { MailApiConfig } from '../mail/createMailTransport';
import { type MailSizeLimits } from '../mail/mailSizeLimits';
import type { SmtpConfig } from '../mail/smtp/smtpMailTransport';
import { type MailProviderName } from '../mail/providers/mailProvider';
import type { IdempotencyRetrySettings, OrderMailWorkflowSettings } from '../shared/workflowSettings';
import type { TracingSettings } from '../tracing/tracing';
import { type VerificationConfig } from '../verification/verificationConfig';
import type { HealthSettings } from '../db/providerHealth';
import { type TemporalConnectionConfig } from './temporalConnection';
import type { WitnessProbeSettings } from '../verification/witnessProbe';

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
  /**
   * MAIL_PROVIDERS_DRAINING: providers of `providers` that finish the attempts bound to them and take no new
   * ones (docs/providers.md#draining-a-provider).
   */
  drainingProviders: string[];
  /**
   * MAIL_PROVIDERS_FORCE_START_REASON: why this worker starts although open rows are bound to a provider it is
   * not configured for (src/db/boundProviders.ts); logged. Null: it refuses to start.
   */
  forceStartReason: string | null;
  /** When a failing provider is skipped by new attempts (MAIL_PROVIDER_SKIP_*, src/db/providerHealth.ts). */
  providerHealth: HealthSettings;
  /** Set when MAIL_PROVIDER=smtp: the worker then sends over SMTP and `mailApi` is not used. Holds the password. */
  smtp: SmtpConfig | null;
  mail: { from: string; replyTo: string | null; subject: string };
  /** How large one mail may get; an order over a limit is refused before sending (src/mail/mailSizeLimits.ts). */
  mailLimits: MailSizeLimits;
  /**
   * MAIL_TEMPLATE_DIR: the shop's mail templates (src/mail/template/mailTemplates.ts), loaded and checked at
   * start. Null: the Japanese template the repository ships.
   */
  mailTemplateDir: string | null;
  /** How unknown outcomes are verified with the provider (MAIL_VERIFY_*); null when they are not. */
  verification: VerificationConfig | null;
  /**
   * MAIL_WITNESS_SINK_ADDRESS and MAIL_WITNESS_PROBE_INTERVAL_MS (src/verification/witnessProbe.ts); null
   * without a sink address: organic witnesses only.
   */
  witnessProbe: WitnessProbeSettings | null;
  /**
   * MAIL_DEPLOYMENT_ID: this deployment's name in every send key (src/mail/idempotencyKey.ts), so a staging
   * system with the same order ids on the same provider account is never taken for this one. Default: the
   * Temporal namespace.
   */
  deploymentId: string;
  /** OpenTelemetry traces over OTLP (src/tracing/tracing.ts); null when off (src/config/tracingSettings.ts). */
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
    /** LOG_LEVEL: the least severe line the worker prints. */
    logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
    pgPoolMax: number;
    pgStatementTimeoutMs: number;
    /** Sends per second for the whole task queue, enforced by the Temporal server; null for no limit. */
    sendRateLimitPerSecond: number | null;
    /** TEMPORAL_WORKER_DEPLOYMENT_NAME and _BUILD_ID (src/config/workerDeployment.ts); null: unversioned. */
    deployment: WorkerDeploymentVersion | null;
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
