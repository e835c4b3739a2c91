// One provider event as we keep it, and the pure readers of its fields from a webhook body.
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';

export type ProviderEventType = 'accepted' | 'delivered' | 'bounced' | 'dropped' | 'complained';
export type WebhookProvider = 'sendgrid' | 'mailgun' | 'ses';

export interface ProviderEvent {
  provider: WebhookProvider;
  providerEventId: string;
  orderId: string;
  sendKey: string | null;
  providerMessageId: string | null;
  eventType: ProviderEventType;
  occurredAt: Date;
  reason: string | null;
  /** SES: mail.sendingAccountId and the ses:configuration-set tag; it counts only for the same. */
  source?: { account: string; configurationSet: string };
}

/** A webhook body we refuse as a whole (400): nothing of it is written. */
export class MalformedWebhookError extends Error {
  override readonly name = 'MalformedWebhookError';
  readonly code = 'ERR_MALFORMED_WEBHOOK';
}

const EVENT_ID = /^[\x21-\x7e]{1,200}$/;
const SEND_KEY = /^[\x21-\x7e]{1,256}$/;
const MESSAGE_ID = /^[\x21-\x7e]{1,256}$/;
const MAX_REASON_LENGTH = 500;
// Bounce texts quote the recipient ("550 5.1.1 <taro@example.jp>: user unknown"); the reason is kept for
// operators, the address is not.
const ADDRESS = /<?[^\s<>@"]+@[^\s<>@"]+>?/g;

/** Null when not ours: another system on the account may use the field ("INV-2026-0042"). */
export function orderIdOrNull(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  try {
    return parseOrderId(value);
  } catch (error) {
    if (error instanceof InvalidOrderIdError) return null;
    throw error;
  }
}

export function requiredEventId(value: unknown): string {
  if (typeof value !== 'string' || !EVENT_ID.test(value)) {
    throw new MalformedWebhookError('an event of ours has no usable event id');
  }
  return value;
}

/** The send key an event carries, or null for none or one that cannot be ours (src/webhooks/ourEvent.ts). */
export function optionalSendKey(value: unknown): string | null {
  return typeof value === 'string' && SEND_KEY.test(value) ? value : null;
}

export function optionalMessageId(value: unknown): string | null {
  return typeof value === 'string' && MESSAGE_ID.test(value) ? value : null;
}

/** Seconds since the epoch (an integer or a fraction) as a Date; throws for anything else. */
export function epochSeconds(value: unknown): Date {
  const seconds = typeof value === 'string' && /^[0-9]+(\.[0-9]+)?$/.test(value) ? Number(value) : value;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 1e11) {
    throw new MalformedWebhookError('an event has no usable timestamp');
  }
  return new Date(Math.round(seconds * 1000));
}

export function scrubbedReason(...parts: unknown[]): string | null {
  const text = parts
    .filter((part): part is string | number => typeof part === 'string' || typeof part === 'number')
    .map((part) => String(part).trim())
    .filter((part) => part !== '')
    .join(' — ')
    .replace(ADDRESS, '<address>')
    // eslint-disable-next-line no-control-regex -- removing control characters is the point
    .replace(/[\u0000-\u001f\u007f]+/g, ' ');
  if (text === '') return null;
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH - 1)}…` : text;
}
