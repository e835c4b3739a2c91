// Configuration of the webhook receiver (npm run webhooks). Pure: the environment in, every problem at once.
//   WEBHOOK_DATABASE_URL          where events are stored (the workers' database), as the receiver's own login
//                                 in order_mail_webhooks (migration 0025, npm run db:roles); never the workers'
//   WEBHOOK_BIND_ADDRESS          host:port to listen on (default 0.0.0.0:8090); put TLS in front of it
//   SENDGRID_WEBHOOK_PUBLIC_KEY   SendGrid's verification key (Mail Settings → Signed Event Webhook), base64 or PEM
//   MAILGUN_WEBHOOK_SIGNING_KEY   Mailgun's HTTP webhook signing key
//   WEBHOOK_MAX_AGE_MS            how far a signature's timestamp may be from our clock (default 300000)
//   WEBHOOK_MAX_BODY_BYTES        a larger body is refused while it is read (default 1048576; SendGrid's
//                                 batches stay under 768 KB)
//   WEBHOOK_REQUEST_TIMEOUT_MS    a request not fully received by then is answered 408 (default 15000; the
//                                 headers must come within the smaller of it and 10 s)
//   WEBHOOK_MAX_CONNECTIONS       open connections at most; more are closed at once (default 128)
//   WEBHOOK_METRICS_BIND_ADDRESS  host:port of GET /metrics (default 127.0.0.1:9466, loopback); "off" for none
// At least one of the two keys; a provider without its key has no endpoint (404), never an unchecked one.
import type { KeyObject } from 'node:crypto';
import { ConfigError } from '../config/loadConfig';
import { sendGridPublicKey } from './sendgridWebhook';

export interface WebhookConfig {
  databaseUrl: string;
  host: string;
  port: number;
  maxBodyBytes: number;
  requestTimeoutMs: number;
  maxConnections: number;
  /** null: no metrics port. */
  metrics: { host: string; port: number } | null;
  /** Holds a key: never log this object. */
  sendgridPublicKey: KeyObject | null;
  mailgunSigningKey: string | null;
  maxAgeMs: number;
}

export const WEBHOOK_DEFAULTS = {
  WEBHOOK_BIND_ADDRESS: '0.0.0.0:8090',
  WEBHOOK_MAX_AGE_MS: 300_000,
  WEBHOOK_MAX_BODY_BYTES: 1_048_576,
  WEBHOOK_REQUEST_TIMEOUT_MS: 15_000,
  WEBHOOK_MAX_CONNECTIONS: 128,
  WEBHOOK_METRICS_BIND_ADDRESS: '127.0.0.1:9466',
} as const;

const HOST_PORT = /^(\[[^\]]+\]|[^\s:]+):([0-9]{1,5})$/;

export function loadWebhookConfig(env: Record<string, string | undefined>): WebhookConfig {
  const problems: string[] = [];
  const read = (name: string): string | null => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  };
  const databaseUrl = read('WEBHOOK_DATABASE_URL');
  if (databaseUrl === null) {
    problems.push(
      "WEBHOOK_DATABASE_URL is required: the receiver's own login in order_mail_webhooks (npm run db:roles).",
    );
  } else if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('WEBHOOK_DATABASE_URL must be a postgres:// or postgresql:// URL.');
  }
  const hostPort = (name: string, fallback: string): { host: string; port: number } | null => {
    const text = read(name) ?? fallback;
    const match = HOST_PORT.exec(text);
    if (match === null || Number(match[2]) > 65_535) {
      problems.push(`${name} must look like host:port, e.g. ${fallback} (got ${JSON.stringify(text)}).`);
      return null;
    }
    return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
  };
  const listen = hostPort('WEBHOOK_BIND_ADDRESS', WEBHOOK_DEFAULTS.WEBHOOK_BIND_ADDRESS);
  const metrics =
    read('WEBHOOK_METRICS_BIND_ADDRESS')?.toLowerCase() === 'off'
      ? null
      : hostPort('WEBHOOK_METRICS_BIND_ADDRESS', WEBHOOK_DEFAULTS.WEBHOOK_METRICS_BIND_ADDRESS);
  const integer = (name: keyof typeof WEBHOOK_DEFAULTS, min: number, max: number): number => {
    const text = read(name);
    if (text === null) return WEBHOOK_DEFAULTS[name] as number;
    const value = Number(text);
    if (!/^[0-9]+$/.test(text) || value < min || value > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got ${JSON.stringify(text)}).`);
    }
    return value;
  };
  const maxBodyBytes = integer('WEBHOOK_MAX_BODY_BYTES', 1_024, 16 * 1_048_576);
  const requestTimeoutMs = integer('WEBHOOK_REQUEST_TIMEOUT_MS', 1_000, 300_000);
  const maxConnections = integer('WEBHOOK_MAX_CONNECTIONS', 1, 65_535);
  let sendgridPublicKey: KeyObject | null = null;
  const sendgridKeyText = read('SENDGRID_WEBHOOK_PUBLIC_KEY');
  if (sendgridKeyText !== null) {
    try {
      sendgridPublicKey = sendGridPublicKey(sendgridKeyText);
    } catch {
      problems.push(
        'SENDGRID_WEBHOOK_PUBLIC_KEY is not an EC public key (base64 DER or PEM; the value is not shown).',
      );
    }
  }
  const mailgunSigningKey = read('MAILGUN_WEBHOOK_SIGNING_KEY');
  if (sendgridKeyText === null && mailgunSigningKey === null) {
    problems.push(
      'Set SENDGRID_WEBHOOK_PUBLIC_KEY, MAILGUN_WEBHOOK_SIGNING_KEY or both: there is nothing to receive.',
    );
  }
  const maxAgeText = read('WEBHOOK_MAX_AGE_MS');
  const maxAgeMs = maxAgeText === null ? WEBHOOK_DEFAULTS.WEBHOOK_MAX_AGE_MS : Number(maxAgeText);
  if (maxAgeText !== null && (!/^[0-9]+$/.test(maxAgeText) || maxAgeMs < 1_000)) {
    problems.push(`WEBHOOK_MAX_AGE_MS must be an integer >= 1000 (got ${JSON.stringify(maxAgeText)}).`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return {
    databaseUrl: databaseUrl!,
    host: listen!.host,
    port: listen!.port,
    maxBodyBytes,
    requestTimeoutMs,
    maxConnections,
    metrics,
    sendgridPublicKey,
    mailgunSigningKey,
    maxAgeMs,
  };
}
