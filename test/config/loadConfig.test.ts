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

  it('reads the tracing variables: off without an OTLP endpoint, a Zipkin as well, the batch delay', () => {
    expect(loadConfig(REQUIRED).tracing).toBeNull();
    expect(loadConfig({ ...REQUIRED, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual(
      {
        endpoint: 'http://collector:4318',
        serviceName: 'order-confirmation-mail-worker',
        zipkinEndpoint: null,
        batchDelayMs: 1_000,
      },
    );
    expect(
      loadConfig({
        ...REQUIRED,
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_ZIPKIN_ENDPOINT: 'http://zipkin:9411/api/v2/spans',
        OTEL_BSP_SCHEDULE_DELAY: '250',
      }).tracing,
    ).toMatchObject({ zipkinEndpoint: 'http://zipkin:9411/api/v2/spans', batchDelayMs: 250 });
    const problems = problemsOf({
      ...REQUIRED,
      OTEL_EXPORTER_ZIPKIN_ENDPOINT: 'zipkin:9411',
      OTEL_BSP_SCHEDULE_DELAY: '0',
    });
    expect(problems.some((problem) => problem.includes('OTEL_EXPORTER_ZIPKIN_ENDPOINT'))).toBe(true);
    expect(problems.some((problem) => problem.includes('OTEL_BSP_SCHEDULE_DELAY'))).toBe(true);
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
});
