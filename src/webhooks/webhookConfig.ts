// The webhook receiver's configuration, pure; its variables: docs/production.md, "The webhook receiver".
import type { KeyObject } from 'node:crypto';
import { ConfigError } from '../config/envReader';
import { sendGridPublicKey } from './sendgridWebhook';
import { DEFAULT_SNS_CERT_HOST_PATTERN, DEFAULT_SNS_MAX_RETRY_MS, type SnsSettings } from './snsWebhook';

const SNS_ONLY_NAMES = ['SNS_CERT_HOST_PATTERN', 'SNS_REQUIRE_SIGNATURE_V2', 'SNS_MAX_RETRY_S'];

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
  /** SES events by SNS; null for no /webhooks/ses. */
  sns: SnsSettings | null;
  maxAgeMs: number;
}

/** Hosts no SNS certificate pattern may match: a pattern that does would trust certificates from outside AWS. */
const NOT_SNS_HOSTS = [
  'localhost',
  '127.0.0.1',
  'sns.example.com',
  'sns.us-east-1.amazonaws.com.example.com',
  'evilsns.us-east-1.amazonaws.com',
  'sns.us-east-1.amazonaws.co',
];
/** Names the receiver refuses outright: test-only trust must never come from a deployment's environment. */
const TEST_ONLY_NAMES = [
  'SNS_TRUST_TEST_CERTIFICATE_ORIGIN',
  'SNS_TEST_CERTIFICATE_ORIGIN',
  'SNS_CERT_URL_OVERRIDE',
];

const WEBHOOK_DEFAULTS = {
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
  const sns = readSnsSettings(read, problems);
  if (sendgridKeyText === null && mailgunSigningKey === null && sns === null) {
    problems.push(
      'Set SENDGRID_WEBHOOK_PUBLIC_KEY, MAILGUN_WEBHOOK_SIGNING_KEY, SES_SNS_TOPIC_ARNS or several: there is ' +
        'nothing to receive.',
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
    sns,
    maxAgeMs,
  };
}

function readSnsSettings(read: (name: string) => string | null, problems: string[]): SnsSettings | null {
  for (const name of TEST_ONLY_NAMES) {
    if (read(name) !== null) {
      problems.push(
        `${name} is not a setting: trusting SNS certificates from anywhere but AWS is for tests only, and only ` +
          'in code. Remove it.',
      );
    }
  }
  const topics = read('SES_SNS_TOPIC_ARNS');
  const patternText = read('SNS_CERT_HOST_PATTERN');
  if (topics === null) {
    for (const name of SNS_ONLY_NAMES) {
      if (read(name) !== null) problems.push(`${name} is set without SES_SNS_TOPIC_ARNS.`);
    }
    return null;
  }
  const versionText = read('SNS_REQUIRE_SIGNATURE_V2')?.toLowerCase() ?? 'false';
  if (versionText !== 'true' && versionText !== 'false') {
    problems.push(`SNS_REQUIRE_SIGNATURE_V2 must be true or false (got ${JSON.stringify(versionText)}).`);
  }
  const retryText = read('SNS_MAX_RETRY_S');
  const maxRetryS = retryText === null ? DEFAULT_SNS_MAX_RETRY_MS / 1_000 : Number(retryText);
  if (retryText !== null && (!/^[0-9]+$/.test(retryText) || maxRetryS < 60 || maxRetryS > 86_400)) {
    problems.push(
      `SNS_MAX_RETRY_S must be an integer from 60 to 86400, at least the subscription's delivery policy's ` +
        `retry time (got ${JSON.stringify(retryText)}).`,
    );
  }
  const topicArns = topics
    .split(',')
    .map((topic) => topic.trim())
    .filter((topic) => topic !== '');
  const badTopics = topicArns.filter(
    (topic) => !/^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}(\.fifo)?$/.test(topic),
  );
  if (topicArns.length === 0 || badTopics.length > 0) {
    problems.push(
      `SES_SNS_TOPIC_ARNS must be SNS topic ARNs separated by commas (arn:aws:sns:<region>:<account>:<topic>)` +
        (badTopics.length > 0
          ? `; not one: ${badTopics.map((topic) => JSON.stringify(topic)).join(', ')}.`
          : '.'),
    );
  }
  let certHostPattern = new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN);
  if (patternText !== null) {
    try {
      certHostPattern = new RegExp(patternText);
    } catch {
      problems.push('SNS_CERT_HOST_PATTERN is not a regular expression.');
    }
    const tooWide = NOT_SNS_HOSTS.filter((host) => certHostPattern.test(host));
    if (!patternText.startsWith('^') || !patternText.endsWith('$') || tooWide.length > 0) {
      problems.push(
        'SNS_CERT_HOST_PATTERN must be anchored (^…$) and match SNS hosts under amazonaws.com only' +
          (tooWide.length > 0 ? ` (it matches ${tooWide.join(', ')})` : '') +
          ': a certificate from anywhere else would let anyone sign events.',
      );
    }
  }
  return {
    topicArns: new Set(topicArns),
    certHostPattern,
    requireSignatureVersion2: versionText === 'true',
    maxRetryMs: maxRetryS * 1_000,
  };
}
