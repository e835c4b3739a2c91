// Worker configuration, parsed and validated in one place. Pure: takes the environment as an argument and
// reports every problem at once, so an operator fixes a deployment in one go instead of one error per restart.
// The one exception: the Temporal connection reads the certificate and TOML files the environment names, so a
// wrong path is one of the problems reported at start-up.
import { readWorkerDeployment } from './workerDeployment';
import { DEPLOYMENT_ID_PATTERN } from '../evidence/messageIdentity';
import { UNKNOWN_OUTCOME_POLICIES, type UnknownOutcomePolicy } from '../shared/mailOutcome';
import { readVerificationConfig } from '../verification/verificationConfig';
import { readDrainingProviders, readProviderList } from './providerList';
import { CONFIG_DEFAULTS } from './configDefaults';
import { ConfigError, EnvReader } from './envReader';
import { readProviderPart, readSmtpConfig, sendTimeoutProblem } from './mailSettings';
import { readTracingSettings } from './tracingSettings';
import { recipientAddressProblem } from '../mail/recipientAddress';
import type { WorkerConfig } from './workerConfig';

export { CONFIG_DEFAULTS } from './configDefaults';
export { ConfigError } from './envReader';
export type { ProviderConfig, WorkerConfig } from './workerConfig';

/** What MAIL_DEPLOYMENT_ID defaulted to up to 2.0 (and still does with SMTP only): the namespace, sanitised. */
export function defaultDeploymentIdOf(namespace: string): string {
  return namespace.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63);
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
  const sweepBatchSize = read.positiveInt('RECONCILE_BATCH_SIZE', CONFIG_DEFAULTS.RECONCILE_BATCH_SIZE);
  if (sweepBatchSize > 1_000) {
    problems.push(
      `RECONCILE_BATCH_SIZE (${sweepBatchSize}) must be at most 1000, so one batch stays one short activity.`,
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
  // Every send key names the deployment, and a provider account may be shared (staging, a second cluster):
  // a default would give two deployments the same keys, so with a provider it is set on purpose. SMTP sends
  // carry no key. Upgrading from 2.0: set it to what it defaulted to (README, "Changing it after 2.0").
  const givenDeploymentId = read.optional('MAIL_DEPLOYMENT_ID');
  if (givenDeploymentId === null && list.some((name) => name !== 'smtp')) {
    problems.push(
      "MAIL_DEPLOYMENT_ID is required with a mail provider: this deployment's name in every send key, unique " +
        'among everything that sends through the same provider account. Upgrading from 2.0, set it to the ' +
        `value it defaulted to, the namespace: ${defaultDeploymentIdOf(connection.namespace)}.`,
    );
  }
  const deploymentId = givenDeploymentId ?? defaultDeploymentIdOf(connection.namespace);
  if (!DEPLOYMENT_ID_PATTERN.test(deploymentId)) {
    problems.push(
      `MAIL_DEPLOYMENT_ID must be 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit ` +
        `(got ${JSON.stringify(deploymentId)}).`,
    );
  }
  // Witness probes go to one bare address of the shop's, checked as a customer's address is before its send.
  const witnessSink = read.headerText('MAIL_WITNESS_SINK_ADDRESS');
  const witnessSinkProblem = witnessSink === null ? null : recipientAddressProblem(witnessSink);
  if (witnessSinkProblem !== null) {
    problems.push(
      `MAIL_WITNESS_SINK_ADDRESS ${witnessSinkProblem}: it must be one bare address (sink@example.com).`,
    );
  }
  const witnessProbeIntervalMs = read.positiveInt(
    'MAIL_WITNESS_PROBE_INTERVAL_MS',
    CONFIG_DEFAULTS.MAIL_WITNESS_PROBE_INTERVAL_MS,
  );
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
    drainingProviders: readDrainingProviders(read.optional('MAIL_PROVIDERS_DRAINING'), list, problems),
    forceStartReason: read.optional('MAIL_PROVIDERS_FORCE_START_REASON'),
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
    mailTemplateDir: read.optional('MAIL_TEMPLATE_DIR'),
    verification,
    witnessProbe:
      witnessSink === null ? null : { sinkAddress: witnessSink.trim(), intervalMs: witnessProbeIntervalMs },
    deploymentId,
    tracing: readTracingSettings(read, problems),
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
      batchSize: sweepBatchSize,
      secondLookMaxLateMs:
        read.nonNegativeInt('MAIL_SECOND_LOOK_MAX_LATE_H', CONFIG_DEFAULTS.MAIL_SECOND_LOOK_MAX_LATE_H) *
        3_600_000,
    },
    worker: {
      shutdownGraceTimeMs,
      maxConcurrentActivityTaskExecutions: read.positiveInt(
        'WORKER_MAX_CONCURRENT_ACTIVITIES',
        CONFIG_DEFAULTS.WORKER_MAX_CONCURRENT_ACTIVITIES,
      ),
      maxConcurrentLookups: read.positiveInt(
        'WORKER_MAX_CONCURRENT_LOOKUPS',
        CONFIG_DEFAULTS.WORKER_MAX_CONCURRENT_LOOKUPS,
      ),
      metricsBindAddress: read.hostPort('TEMPORAL_METRICS_BIND_ADDRESS'),
      httpBindAddress: read.hostPort('WORKER_HTTP_BIND_ADDRESS', { loopbackForBarePort: true }),
      gaugeRefreshIntervalMs: read.positiveInt(
        'WORKER_GAUGE_REFRESH_INTERVAL_MS',
        CONFIG_DEFAULTS.WORKER_GAUGE_REFRESH_INTERVAL_MS,
      ),
      workflowBundlePath: read.optional('WORKFLOW_BUNDLE_PATH'),
      logLevel: read
        .oneOf('LOG_LEVEL', ['debug', 'info', 'warn', 'error'], 'info')
        .toUpperCase() as WorkerConfig['worker']['logLevel'],
      pgPoolMax: read.positiveInt('PG_POOL_MAX', CONFIG_DEFAULTS.PG_POOL_MAX),
      pgStatementTimeoutMs: read.positiveInt(
        'PG_STATEMENT_TIMEOUT_MS',
        CONFIG_DEFAULTS.PG_STATEMENT_TIMEOUT_MS,
      ),
      pgPreparedStatements:
        read.oneOf('PG_PREPARED_STATEMENTS', ['true', 'false'], CONFIG_DEFAULTS.PG_PREPARED_STATEMENTS) ===
        'true',
      sendRateLimitPerSecond: read.optionalPositiveNumber('MAIL_SEND_RATE_LIMIT_PER_SECOND'),
      deployment: readWorkerDeployment(read, problems),
    },
  };
  // Several providers read the same shared variables (MAIL_FROM, MAILGUN_REGION…): each problem once.
  // The bench's switches each leave a guarantee's part out (dev/bench/switches); a worker never runs so.
  for (const name of Object.keys(env)
    .filter((key) => key.startsWith('BENCH_SKIP_'))
    .sort()) {
    problems.push(
      `${name} is a benchmark switch (npm run bench) that leaves out part of the guarantees; unset it.`,
    );
  }
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  return config;
}
