// The receiver's own settings (src/webhooks/webhookConfig.ts): its own login, never the workers'
// DATABASE_URL; request limits with defaults; metrics on loopback unless told otherwise. Pure.
import { describe, expect, it } from 'vitest';
import { SandboxWebhooks } from '../../packages/sandbox/src/webhooks';
import { loadWebhookConfig } from '../../src/webhooks/webhookConfig';

const signingKey = new SandboxWebhooks({}, 1).mailgunSigningKey;

describe('loadWebhookConfig', () => {
  it('defaults: a 1 MiB body, 15 s per request, 128 connections, metrics on 127.0.0.1:9466', () => {
    expect(
      loadWebhookConfig({
        WEBHOOK_DATABASE_URL: 'postgres://hooks:p@localhost/shop',
        MAILGUN_WEBHOOK_SIGNING_KEY: signingKey,
      }),
    ).toMatchObject({
      maxBodyBytes: 1_048_576,
      requestTimeoutMs: 15_000,
      maxConnections: 128,
      metrics: { host: '127.0.0.1', port: 9466 },
    });
  });

  it("does not fall back to the workers' DATABASE_URL", () => {
    expect(() =>
      loadWebhookConfig({
        DATABASE_URL: 'postgres://app:p@localhost/shop',
        MAILGUN_WEBHOOK_SIGNING_KEY: signingKey,
      }),
    ).toThrow(/WEBHOOK_DATABASE_URL is required/);
  });

  it('takes its limits and "off" for metrics, and reports every bad value at once', () => {
    const base = { WEBHOOK_DATABASE_URL: 'postgres://h:p@db/shop', MAILGUN_WEBHOOK_SIGNING_KEY: signingKey };
    expect(
      loadWebhookConfig({
        ...base,
        WEBHOOK_MAX_BODY_BYTES: '65536',
        WEBHOOK_REQUEST_TIMEOUT_MS: '2000',
        WEBHOOK_MAX_CONNECTIONS: '8',
        WEBHOOK_METRICS_BIND_ADDRESS: 'off',
      }),
    ).toMatchObject({ maxBodyBytes: 65_536, requestTimeoutMs: 2_000, maxConnections: 8, metrics: null });
    expect(() =>
      loadWebhookConfig({
        ...base,
        WEBHOOK_MAX_BODY_BYTES: '1e9',
        WEBHOOK_REQUEST_TIMEOUT_MS: '0',
        WEBHOOK_MAX_CONNECTIONS: '-1',
        WEBHOOK_METRICS_BIND_ADDRESS: 'everywhere',
      }),
    ).toThrow(
      /WEBHOOK_METRICS_BIND_ADDRESS[\s\S]*WEBHOOK_MAX_BODY_BYTES[\s\S]*WEBHOOK_REQUEST_TIMEOUT_MS[\s\S]*WEBHOOK_MAX_CONNECTIONS/,
    );
  });
});
