// A message is ours by the send key or the message id we chose, compared exactly: docs/design.md §5,
// "What counts as evidence".
import type { SendDestination } from './destination';

export const DEFAULT_DEPLOYMENT_ID = 'default';

/** Short, and only characters that keys, metadata and Message-Ids all allow. */
export const DEPLOYMENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** The Message-Id a Mailgun send sets: the same on every attempt (docs/providers.md, Mailgun). */
export function mailgunMessageId(sendKey: string, domain: string): string {
  return `${mailgunMessageIdLocalPart(sendKey)}@${domain}`;
}

export function mailgunMessageIdLocalPart(sendKey: string): string {
  return sendKey.replace(/[^A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]/g, '-');
}

/** The message id we chose before sending (Mailgun); null where the provider assigns it. */
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

/** The send key as an SES tag value, in base64url: docs/providers.md, Amazon SES. */
export function sesTagValue(sendKey: string): string {
  return Buffer.from(sendKey, 'utf8').toString('base64url');
}

export function sendKeyOfSesTag(value: string): string | null {
  if (!/^[A-Za-z0-9_-]{1,256}$/.test(value)) return null;
  const key = Buffer.from(value, 'base64url').toString('utf8');
  return sesTagValue(key) === value ? key : null;
}
