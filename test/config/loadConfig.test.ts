import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { problemsOf } from '../support/configProblems';

const REQUIRED = {
  DATABASE_URL: 'postgres://user:secret@db:5432/shop',
  MAIL_DEPLOYMENT_ID: 'test-deployment',
  MAIL_API_BASE_URL: 'https://mail.example.com/',
  MAIL_API_KEY: 'key-123',
};

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(REQUIRED);
    expect(config.temporal).toMatchObject({
      address: 'localhost:7233',
      namespace: 'default',
      taskQueue: 'order-confirmation-mail',
      connection: { connectionOptions: { address: 'localhost:7233' }, namespace: 'default' },
    });
    expect(config.mailApi.baseUrl).toBe('https://mail.example.com');
    expect(config.workflow).toEqual({
      unknownOutcomePolicy: 'assume-sent',
      sendTimeoutMs: 60_000,
      maxSendAttempts: 8,
      retryInitialIntervalMs: 10_000,
      retryMaxIntervalMs: 600_000,
      // The generic API has no idempotency key, so an unknown outcome is not retried under one...
      idempotency: null,
      // ...but it has a lookup: the workflow waits the gateway contract's settle delay and asks first.
      verification: { settleDelayMs: 30_000, lookupTimeoutMs: 10_000, deadlineMs: 300_000 },
    });
    expect(config.worker.shutdownGraceTimeMs).toBe(70_000);
    expect(config.worker.metricsBindAddress).toBeNull();
    expect(config.mail).toEqual({
      from: 'shop@example.com',
      replyTo: null,
      subject: 'ご注文ありがとうございます',
    });
    expect(config.mailLimits).toEqual({ maxOrderItems: 1_000, maxRenderedBytes: 1_000_000 });
  });

  it('reads the mail size limits, positive integers only', () => {
    expect(
      loadConfig({ ...REQUIRED, MAIL_MAX_ORDER_ITEMS: '200', MAIL_MAX_RENDERED_BYTES: '500000' }).mailLimits,
    ).toEqual({ maxOrderItems: 200, maxRenderedBytes: 500_000 });
    expect(problemsOf({ ...REQUIRED, MAIL_MAX_ORDER_ITEMS: '0', MAIL_MAX_RENDERED_BYTES: '1MB' })).toEqual([
      expect.stringMatching(/MAIL_MAX_ORDER_ITEMS must be a positive integer/),
      expect.stringMatching(/MAIL_MAX_RENDERED_BYTES must be a positive integer/),
    ]);
  });

  it('reads how late the second look may still send: 24 h by default, 0 turns it off, whole hours only', () => {
    expect(loadConfig(REQUIRED).reconcile.secondLookMaxLateMs).toBe(24 * 3_600_000);
    expect(loadConfig({ ...REQUIRED, MAIL_SECOND_LOOK_MAX_LATE_H: '6' }).reconcile.secondLookMaxLateMs).toBe(
      6 * 3_600_000,
    );
    expect(loadConfig({ ...REQUIRED, MAIL_SECOND_LOOK_MAX_LATE_H: '0' }).reconcile.secondLookMaxLateMs).toBe(
      0,
    );
    expect(
      problemsOf({ ...REQUIRED, MAIL_SECOND_LOOK_MAX_LATE_H: '1.5', MAIL_MAX_ORDER_ITEMS: '0' }),
    ).toEqual([
      expect.stringMatching(/MAIL_MAX_ORDER_ITEMS must be a positive integer/),
      expect.stringMatching(/MAIL_SECOND_LOOK_MAX_LATE_H must be an integer >= 0/),
    ]);
  });

  it('reads the tracing variables: off without an OTLP endpoint, the batch delay', () => {
    expect(loadConfig(REQUIRED).tracing).toBeNull();
    expect(loadConfig({ ...REQUIRED, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual(
      { serviceName: 'order-confirmation-mail-worker', batchDelayMs: 1_000 },
    );
    expect(
      loadConfig({
        ...REQUIRED,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_BSP_SCHEDULE_DELAY: '250',
      }).tracing,
    ).toMatchObject({ batchDelayMs: 250 });
    expect(problemsOf({ ...REQUIRED, OTEL_BSP_SCHEDULE_DELAY: '0' })).toEqual([
      expect.stringMatching(/OTEL_BSP_SCHEDULE_DELAY/),
    ]);
    // An empty retired variable (a compose file passing it through unset) is no setting.
    expect(loadConfig({ ...REQUIRED, OTEL_EXPORTER_ZIPKIN_ENDPOINT: '' }).tracing).toBeNull();
  });

  // Each OTEL_* variable the worker honours, and whether tracing is then on.
  it.each([
    ['nothing set: off', {}, false],
    ['the general endpoint: on', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [
      'the traces endpoint alone: on',
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' },
      true,
    ],
    [
      'OTEL_TRACES_EXPORTER=otlp without an endpoint: on, to the default',
      { OTEL_TRACES_EXPORTER: 'otlp' },
      true,
    ],
    [
      'OTEL_TRACES_EXPORTER=none with an endpoint: off',
      { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      false,
    ],
    [
      'OTEL_TRACES_EXPORTER=" OTLP " (trimmed, any case): on',
      { OTEL_TRACES_EXPORTER: ' OTLP ', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      true,
    ],
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      true,
    ],
    [
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf wins over a general grpc',
      {
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      },
      true,
    ],
    [
      'a protocol the worker cannot use, with tracing off: not its business',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
      false,
    ],
    [
      'OTEL_SERVICE_NAME',
      { OTEL_SERVICE_NAME: 'mail-eu', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      true,
    ],
    [
      'OTEL_RESOURCE_ATTRIBUTES, percent-encoded, quoted, a trailing comma',
      {
        OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team="mail%20ops",',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      },
      true,
    ],
  ] as const)('tracing: %s', (_case, env, on) => {
    const tracing = loadConfig({ ...REQUIRED, ...env }).tracing;
    expect(tracing !== null).toBe(on);
    if ('OTEL_SERVICE_NAME' in env) expect(tracing?.serviceName).toBe(env.OTEL_SERVICE_NAME);
  });

  // Each refusal, at start, with a message naming the variable and what to do instead.
  it.each([
    [
      'OTEL_TRACES_EXPORTER=zipkin',
      { OTEL_TRACES_EXPORTER: 'zipkin' },
      /OTEL_TRACES_EXPORTER names zipkin.*use otlp to an OpenTelemetry Collector whose zipkin exporter feeds the Zipkin/,
    ],
    [
      'OTEL_EXPORTER_ZIPKIN_ENDPOINT, even beside an OTLP endpoint',
      {
        OTEL_EXPORTER_ZIPKIN_ENDPOINT: 'http://zipkin:9411/api/v2/spans',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      },
      /OTEL_EXPORTER_ZIPKIN_ENDPOINT is no longer read.*OpenTelemetry Collector whose zipkin exporter feeds the Zipkin/,
    ],
    [
      'OTEL_EXPORTER_ZIPKIN_ENDPOINT with tracing off',
      { OTEL_EXPORTER_ZIPKIN_ENDPOINT: 'http://zipkin:9411/api/v2/spans' },
      /OTEL_EXPORTER_ZIPKIN_ENDPOINT is no longer read/,
    ],
    ['OTEL_TRACES_EXPORTER=jaeger', { OTEL_TRACES_EXPORTER: 'jaeger' }, /OTEL_TRACES_EXPORTER names jaeger/],
    [
      'OTEL_TRACES_EXPORTER=console beside otlp',
      { OTEL_TRACES_EXPORTER: 'otlp,console' },
      /OTEL_TRACES_EXPORTER names console/,
    ],
    ['OTEL_TRACES_EXPORTER=otlp,none', { OTEL_TRACES_EXPORTER: 'otlp,none' }, /names both none and otlp/],
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL=grpc',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      /OTEL_EXPORTER_OTLP_PROTOCOL is grpc.*use http\/protobuf/,
    ],
    [
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc',
      { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL is grpc/,
    ],
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL=http/json (its exporter is not shipped)',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' },
      /OTEL_EXPORTER_OTLP_PROTOCOL is http\/json, which needs @opentelemetry\/exporter-trace-otlp-http/,
    ],
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL=udp',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'udp', OTEL_TRACES_EXPORTER: 'otlp' },
      /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf \(got udp\)/,
    ],
    [
      'OTEL_EXPORTER_OTLP_PROTOCOL=toString (no lookup on the prototype)',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'toString', OTEL_TRACES_EXPORTER: 'otlp' },
      /OTEL_EXPORTER_OTLP_PROTOCOL must be http\/protobuf \(got toString\)/,
    ],
    [
      'OTEL_EXPORTER_OTLP_ENDPOINT not a URL',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      /OTEL_EXPORTER_OTLP_ENDPOINT must be a http: or https:/,
    ],
    [
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT not a URL',
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' },
      /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is not a valid URL/,
    ],
    [
      'OTEL_RESOURCE_ATTRIBUTES without =',
      { OTEL_RESOURCE_ATTRIBUTES: 'prod' },
      /OTEL_RESOURCE_ATTRIBUTES must be key=value pairs/,
    ],
    [
      'OTEL_RESOURCE_ATTRIBUTES with a space',
      { OTEL_RESOURCE_ATTRIBUTES: 'team=mail ops' },
      /OTEL_RESOURCE_ATTRIBUTES: team must be printable ASCII/,
    ],
    [
      'OTEL_RESOURCE_ATTRIBUTES with bad percent-encoding',
      { OTEL_RESOURCE_ATTRIBUTES: 'team=mail%zz' },
      /the value of team is not valid percent-encoding/,
    ],
    [
      'OTEL_BSP_SCHEDULE_DELAY not positive',
      { OTEL_BSP_SCHEDULE_DELAY: '0' },
      /OTEL_BSP_SCHEDULE_DELAY must be a positive integer/,
    ],
  ] as const)('tracing refuses %s', (_case, env, message) => {
    expect(problemsOf({ ...REQUIRED, ...env })).toEqual([expect.stringMatching(message)]);
  });

  it('reports every tracing problem at once', () => {
    expect(
      problemsOf({
        ...REQUIRED,
        OTEL_TRACES_EXPORTER: 'zipkin,otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_RESOURCE_ATTRIBUTES: 'prod',
      }),
    ).toHaveLength(3);
  });

  it('reports every problem at once', () => {
    const problems = problemsOf({
      DATABASE_URL: 'mysql://db/shop',
      MAIL_API_BASE_URL: 'not a url',
      UNKNOWN_OUTCOME_POLICY: 'maybe',
      SEND_MAX_ATTEMPTS: '0',
      TEMPORAL_METRICS_BIND_ADDRESS: '9464',
    });
    expect(problems).toHaveLength(7);
    expect(problems.join('\n')).toMatch(/DATABASE_URL.*postgres/);
    expect(problems.join('\n')).toMatch(/MAIL_DEPLOYMENT_ID is required with a mail provider/);
    expect(problems.join('\n')).toMatch(/MAIL_API_BASE_URL is not a valid URL/);
    expect(problems.join('\n')).toMatch(/MAIL_API_KEY is required/);
    expect(problems.join('\n')).toMatch(/UNKNOWN_OUTCOME_POLICY must be one of assume-sent, assume-failed/);
    expect(problems.join('\n')).toMatch(/SEND_MAX_ATTEMPTS must be a positive integer/);
    expect(problems.join('\n')).toMatch(/TEMPORAL_METRICS_BIND_ADDRESS must look like host:port/);
  });

  it('requires MAIL_DEPLOYMENT_ID with a mail provider, naming the value it defaulted to; not with SMTP only', () => {
    const { MAIL_DEPLOYMENT_ID: _id, ...withoutId } = REQUIRED;
    expect(problemsOf({ ...withoutId, TEMPORAL_NAMESPACE: 'shop/prod' })).toEqual([
      expect.stringMatching(/^MAIL_DEPLOYMENT_ID is required .* the namespace: shop-prod\.$/),
    ]);
    expect(
      problemsOf({ ...withoutId, MAIL_PROVIDERS: 'postmark,smtp', POSTMARK_API_KEY: 'k' }).join('\n'),
    ).toMatch(/MAIL_DEPLOYMENT_ID is required/);
    const smtpOnly = {
      DATABASE_URL: REQUIRED.DATABASE_URL,
      MAIL_PROVIDER: 'smtp',
      SMTP_HOST: 'smtp.example.com',
    };
    expect(loadConfig({ ...smtpOnly, TEMPORAL_NAMESPACE: 'shop/prod' }).deploymentId).toBe('shop-prod');
    expect(loadConfig({ ...REQUIRED, MAIL_DEPLOYMENT_ID: 'shop-eu' }).deploymentId).toBe('shop-eu');
  });

  it('keeps the send timeout above the HTTP deadline and the shutdown grace above the send timeout', () => {
    const problems = problemsOf({
      ...REQUIRED,
      MAIL_OVERALL_TIMEOUT_MS: '40000',
      SEND_ACTIVITY_TIMEOUT_MS: '42000',
      WORKER_SHUTDOWN_GRACE_MS: '1000',
    });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/SEND_ACTIVITY_TIMEOUT_MS \(42000\) must be at least/);
    expect(problems[1]).toMatch(/WORKER_SHUTDOWN_GRACE_MS \(1000\) must be at least/);
  });

  it('never echoes a database URL that may carry a password', () => {
    const problems = problemsOf({ ...REQUIRED, DATABASE_URL: 'postgres://user:hunter2@[bad' });
    expect(problems.join('\n')).not.toContain('hunter2');
  });

  it('accepts assume-failed', () => {
    expect(
      loadConfig({ ...REQUIRED, UNKNOWN_OUTCOME_POLICY: 'assume-failed' }).workflow.unknownOutcomePolicy,
    ).toBe('assume-failed');
  });

  it('reads LOG_LEVEL: info by default, debug to error, nothing else', () => {
    expect(loadConfig(REQUIRED).worker.logLevel).toBe('INFO');
    expect(loadConfig({ ...REQUIRED, LOG_LEVEL: 'debug' }).worker.logLevel).toBe('DEBUG');
    expect(problemsOf({ ...REQUIRED, LOG_LEVEL: 'verbose' }).join('\n')).toMatch(
      /LOG_LEVEL must be one of debug, info, warn, error/,
    );
  });

  it('reads PG_PREPARED_STATEMENTS: on by default, true or false, nothing else', () => {
    const prepared = (value?: string): boolean =>
      loadConfig({ ...REQUIRED, PG_PREPARED_STATEMENTS: value }).worker.pgPreparedStatements;
    expect(prepared()).toBe(true);
    expect(prepared('')).toBe(true);
    expect(prepared('false')).toBe(false);
    expect(prepared('true')).toBe(true);
    for (const value of ['no', '0', 'off', 'FALSE']) {
      expect(problemsOf({ ...REQUIRED, PG_PREPARED_STATEMENTS: value })).toEqual([
        `PG_PREPARED_STATEMENTS must be one of true, false (got ${JSON.stringify(value)}).`,
      ]);
    }
  });

  it('reads the Worker Deployment Version: unversioned by default; name and build id together, or the problem', () => {
    expect(loadConfig(REQUIRED).worker.deployment).toBeNull();
    expect(
      loadConfig({
        ...REQUIRED,
        TEMPORAL_WORKER_DEPLOYMENT_NAME: 'order-mail',
        TEMPORAL_WORKER_BUILD_ID: '2.5.0',
      }).worker.deployment,
    ).toEqual({ deploymentName: 'order-mail', buildId: '2.5.0' });
    expect(problemsOf({ ...REQUIRED, TEMPORAL_WORKER_BUILD_ID: '2.5.0' }).join('\n')).toMatch(
      /TEMPORAL_WORKER_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID go together.*only the build id/,
    );
    expect(problemsOf({ ...REQUIRED, TEMPORAL_WORKER_DEPLOYMENT_NAME: 'order-mail' }).join('\n')).toMatch(
      /only the deployment name/,
    );
    // The server joins them with a dot: a dot in the name would make another version's name.
    expect(
      problemsOf({
        ...REQUIRED,
        TEMPORAL_WORKER_DEPLOYMENT_NAME: 'order.mail',
        TEMPORAL_WORKER_BUILD_ID: '1',
      }),
    ).toEqual([expect.stringMatching(/TEMPORAL_WORKER_DEPLOYMENT_NAME must be .* no dot/)]);
    expect(
      problemsOf({
        ...REQUIRED,
        TEMPORAL_WORKER_DEPLOYMENT_NAME: 'order-mail',
        TEMPORAL_WORKER_BUILD_ID: 'a b',
      }),
    ).toEqual([expect.stringMatching(/TEMPORAL_WORKER_BUILD_ID must be/)]);
  });

  it('reads the send rate limit: none by default, decimals allowed, nothing but a positive number', () => {
    expect(loadConfig(REQUIRED).worker.sendRateLimitPerSecond).toBeNull();
    expect(
      loadConfig({ ...REQUIRED, MAIL_SEND_RATE_LIMIT_PER_SECOND: '0.5' }).worker.sendRateLimitPerSecond,
    ).toBe(0.5);
    for (const bad of ['0', '-2', 'ten', '1e3']) {
      expect(problemsOf({ ...REQUIRED, MAIL_SEND_RATE_LIMIT_PER_SECOND: bad })).toEqual([
        expect.stringMatching(/MAIL_SEND_RATE_LIMIT_PER_SECOND must be a positive number/),
      ]);
    }
  });

  it('reads the witness sink: no probes by default; one bare address, or the problem', () => {
    expect(loadConfig(REQUIRED).witnessProbe).toBeNull();
    expect(
      loadConfig({ ...REQUIRED, MAIL_WITNESS_SINK_ADDRESS: 'witness-sink@mail.example.com' }).witnessProbe,
    ).toEqual({ sinkAddress: 'witness-sink@mail.example.com', intervalMs: 10_000 });
    expect(
      loadConfig({
        ...REQUIRED,
        MAIL_WITNESS_SINK_ADDRESS: 'sink@example.com',
        MAIL_WITNESS_PROBE_INTERVAL_MS: '60000',
      }).witnessProbe?.intervalMs,
    ).toBe(60_000);
    for (const bad of ['Sink <sink@example.com>', 'sink', 'a@example.com, b@example.com', 'sink@localhost']) {
      expect(problemsOf({ ...REQUIRED, MAIL_WITNESS_SINK_ADDRESS: bad })).toEqual([
        expect.stringMatching(/^MAIL_WITNESS_SINK_ADDRESS .*one bare address/),
      ]);
    }
  });
});
