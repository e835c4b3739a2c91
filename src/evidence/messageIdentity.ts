// What makes a message OURS (docs/design.md, "What counts as evidence"): the send key every request of one send
// carries (src/mail/idempotencyKey.ts builds it, with this deployment's identity in it), and the message id a
// request carried where we chose it ourselves (Mailgun's Message-Id). Compared exactly, never by prefix or
// by order id alone: a staging system with the same order ids on the same provider account, or an earlier
// send of the same order, is not this send.
import type { SendDestination } from './destination';

/** MAIL_DEPLOYMENT_ID when none is configured (the config defaults it to the Temporal namespace). */
export const DEFAULT_DEPLOYMENT_ID = 'default';

/** A deployment identity goes into keys, metadata and Message-Ids: short, and only characters all of them allow. */
export const DEPLOYMENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/**
 * The Message-Id (without angle brackets) a Mailgun send sets for itself: its key made into the local part of
 * an address at the sending domain, so it is the same on every attempt of the send and known before the
 * request leaves. The key's own characters are all allowed there (RFC 5322 atext); anything else becomes '-'.
 */
export function mailgunMessageId(sendKey: string, domain: string): string {
  return `${mailgunMessageIdLocalPart(sendKey)}@${domain}`;
}

/** The part of that Message-Id before the '@': what the webhook receiver checks an event's id against. */
export function mailgunMessageIdLocalPart(sendKey: string): string {
  return sendKey.replace(/[^A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]/g, '-');
}

/**
 * The provider message id this attempt's request carried, where we chose it before sending (Mailgun); null
 * where the provider assigns it and only its lost answer would have told us.
 */
export function expectedMessageIdOf(destination: SendDestination, sendKey: string): string | null {
  if (destination.provider === 'mailgun' && destination.scope !== null) {
    return mailgunMessageId(sendKey, destination.scope);
  }
  return null;
}

/** Message ids compared exactly, except for the angle brackets providers add or leave off. */
export function sameMessageId(a: string, b: string): boolean {
  return stripBrackets(a) === stripBrackets(b);
}

function stripBrackets(id: string): string {
  return id.startsWith('<') && id.endsWith('>') ? id.slice(1, -1) : id;
}

/**
 * The send key as an SES message tag value: SES allows only letters, digits, '_' and '-' there, and our keys
 * have '/' (and a deployment id may have '.'), so the key goes as unpadded base64url, which is exactly that
 * alphabet and turns back into the very key (sendKeyOfSesTag).
 */
export function sesTagValue(sendKey: string): string {
  return Buffer.from(sendKey, 'utf8').toString('base64url');
}

/** The send key an SES tag value carries, or null when it is not one sesTagValue made. */
export function sendKeyOfSesTag(value: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(value)) return null;
  const key = Buffer.from(value, 'base64url').toString('utf8');
  return sesTagValue(key) === value ? key : null;
}
