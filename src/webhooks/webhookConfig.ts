// Configuration of the webhook receiver (npm run webhooks). Pure: the environment in, every problem at once.
//   DATABASE_URL                  where events are stored (the worker's database)
//   WEBHOOK_BIND_ADDRESS          host:port to listen on (default 0.0.0.0:8090); put TLS in front of it
//   SENDGRID_WEBHOOK_PUBLIC_KEY   SendGrid's verification key (Mail Settings → Signed Event Webhook), base64 or PEM
//   MAILGUN_WEBHOOK_SIGNING_KEY   Mailgun's HTTP webhook signing key
//   WEBHOOK_MAX_AGE_MS            how far a signature's timestamp may be from our clock (default 300000)
// At least one of the two keys; a provider without its key has no endpoint (404), never an unchecked one.
import type { KeyObject } from 'node:crypto';
import { ConfigError } from '../config/loadConfig';
import { sendGridPublicKey } from './sendgridWebhook';

export interface WebhookConfig {
  databaseUrl: string;
  host: string;
  port: number;
  /** Holds a key: never log this object. */
  sendgridPublicKey: KeyObject | null;
  mailgunSigningKey: string | null;
  maxAgeMs: number;
}

export const WEBHOOK_DEFAULTS = {
  WEBHOOK_BIND_ADDRESS: '0.0.0.0:8090',
  WEBHOOK_MAX_AGE_MS: 300_000,
} as const;

export function loadWebhookConfig(env: Record<string, string | undefined>): WebhookConfig {
  const problems: string[] = [];
  const read = (name: string): string | null => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? null : value;
  };
  const databaseUrl = read('DATABASE_URL');
  if (databaseUrl === null) problems.push('DATABASE_URL is required.');
  else if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL.');
  }
  const bind = read('WEBHOOK_BIND_ADDRESS') ?? WEBHOOK_DEFAULTS.WEBHOOK_BIND_ADDRESS;
  const match = /^(\[[^\]]+\]|[^\s:]+):([0-9]{1,5})$/.exec(bind);
  if (match === null || Number(match[2]) > 65_535) {
    problems.push(
      `WEBHOOK_BIND_ADDRESS must look like host:port, e.g. 0.0.0.0:8090 (got ${JSON.stringify(bind)}).`,
    );
  }
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
    host: match![1]!.replace(/^\[|\]$/g, ''),
    port: Number(match![2]),
    sendgridPublicKey,
    mailgunSigningKey,
    maxAgeMs,
  };
}
