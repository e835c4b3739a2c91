// What the sandbox knows of the providers' wire formats, written from their documentation (docs/providers.md
// says it in our words), never taken from the product: an oracle built from the code it judges would agree
// with any bug in it. Where the product must read or write the same format, test/sandbox/formatsAgree.test.ts
// holds the two implementations side by side.
import { createHmac } from 'node:crypto';

/** The providers the sandbox plays, by the names MAIL_PROVIDER takes. */
export const PROVIDER_NAMES = ['generic', 'sendgrid', 'postmark', 'resend', 'mailgun', 'ses'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** SES API v2's SendEmail: the path, and the service name its SigV4 signature is scoped to. */
export const SES_SEND_PATH = '/v2/email/outbound-emails';
export const SES_SIGNING_SERVICE = 'ses';
/** The two message tags a confirmation carries; SES repeats them in every event it publishes. */
export const SES_TAGS = { orderId: 'order_id', sendKey: 'send_key' } as const;

// SES allows letters, digits, '_' and '-' in a tag value, up to 256 characters.
const SES_TAG_VALUE = /^[A-Za-z0-9_-]{1,256}$/;

/** A send key as the send_key tag carries it: its UTF-8 bytes in unpadded base64url. */
export function sesTagValue(sendKey: string): string {
  return Buffer.from(sendKey, 'utf8').toString('base64url');
}

/** The send key a send_key tag names, or null when the value is not the canonical encoding of one. */
export function sendKeyOfSesTag(value: string): string | null {
  if (!SES_TAG_VALUE.test(value)) return null;
  const sendKey = Buffer.from(value, 'base64url').toString('utf8');
  // Base64url decoding forgives stray bits and lone characters; only a value that encodes back is a key.
  return sesTagValue(sendKey) === value ? sendKey : null;
}

/** Mailgun's webhook signature: the hex HMAC-SHA256 of timestamp then token, keyed with the signing key. */
export function mailgunSignature(signingKey: string, timestamp: string, token: string): string {
  return createHmac('sha256', signingKey).update(`${timestamp}${token}`).digest('hex');
}

// The fields an SNS signature covers, by message type; Subject only when the message has one.
const SNS_SIGNED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: [
    'Message',
    'MessageId',
    'SubscribeURL',
    'Timestamp',
    'Token',
    'TopicArn',
    'Type',
  ],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

/**
 * The text SNS signs: each covered field as `Name\nvalue\n`, names in byte order; null for an unknown type or
 * a missing field.
 */
export function snsStringToSign(message: Readonly<Record<string, unknown>>): string | null {
  const names = SNS_SIGNED_FIELDS[String(message.Type)];
  if (names === undefined) return null;
  const covered = names.filter((name) => !(name === 'Subject' && message.Subject === undefined));
  if (covered.some((name) => typeof message[name] !== 'string')) return null;
  return [...covered]
    .sort()
    .map((name) => `${name}\n${message[name] as string}\n`)
    .join('');
}
