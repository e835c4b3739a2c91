// What a worker runs with, once loadConfig has checked the environment. Holds API keys and passwords: never
// log it. Each setting is described in .env.example and docs/production.md.
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { SweepSettings } from '../activities/sweepTypes';
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
    connection: TemporalConnectionConfig;
  };
  mailApi: MailApiConfig;
  providers: ProviderConfig[];
  drainingProviders: string[];
  forceStartReason: string | null;
  providerHealth: HealthSettings;
  smtp: SmtpConfig | null;
  mail: { from: string; replyTo: string | null; subject: string };
  mailLimits: MailSizeLimits;
  mailTemplateDir: string | null;
  verification: VerificationConfig | null;
  witnessProbe: WitnessProbeSettings | null;
  deploymentId: string;
  tracing: TracingSettings | null;
  workflow: OrderMailWorkflowSettings;
  reconcile: SweepSettings;
  worker: {
    shutdownGraceTimeMs: number;
    maxConcurrentActivityTaskExecutions: number;
    /** The lookup worker's slots, apart from the sends' (docs/design.md §6, "Lookup slots"). */
    maxConcurrentLookups: number;
    metricsBindAddress: string | null;
    /** A bare port binds loopback only. */
    httpBindAddress: string | null;
    gaugeRefreshIntervalMs: number;
    workflowBundlePath: string | null;
    logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
    pgPoolMax: number;
    pgStatementTimeoutMs: number;
    /** Each statement named, so a connection parses and plans it once (src/db/pool.ts). */
    pgPreparedStatements: boolean;
    sendRateLimitPerSecond: number | null;
    deployment: WorkerDeploymentVersion | null;
  };
}

export interface ProviderConfig {
  name: MailProviderName;
  mailApi: MailApiConfig;
  mail: { from: string; replyTo: string | null; subject: string };
  verification: VerificationConfig | null;
  idempotency: IdempotencyRetrySettings | null;
}
