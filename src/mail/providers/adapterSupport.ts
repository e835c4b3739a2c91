// Helpers the adapters share; what we take from a response stays short and holds nothing but the id.

import type { LookupEntry } from '../../evidence/lookupAnswer';
import type { ResponseHeaders } from './providerTypes';

export class MailClientConfigError extends Error {
  override readonly name = 'MailClientConfigError';
  readonly code = 'ERR_MAIL_CLIENT_CONFIG';
}

/** A bad key is a start-up error, not a "rejected" on every mail; the message never shows it. */
export function checkApiKey(apiKey: string): void {
  const problem = apiKeyProblem(apiKey);
  if (problem !== null) throw new MailClientConfigError(`Invalid mail client options: ${problem}.`);
}

export function apiKeyProblem(apiKey: string): string | null {
  return apiKey.length === 0 || !/^[\x21-\x7e]+$/.test(apiKey)
    ? 'apiKey must be non-empty printable ASCII without spaces'
    : null;
}

export function parseJsonObject(body: string | null): Record<string, unknown> | null {
  if (body === null || body === '') return null;
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

// The id goes into workflow history and the log: only a short token, never arbitrary text.
const MESSAGE_ID = /^[\x21-\x7e]{1,256}$/;

export function safeMessageId(value: unknown): string | null {
  return typeof value === 'string' && MESSAGE_ID.test(value) ? value : null;
}

export function headerValue(headers: ResponseHeaders, name: string): string | null {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}

export function documentedName(value: unknown, documented: ReadonlySet<string>): string | null {
  return typeof value === 'string' && documented.has(value) ? value : null;
}

export interface Mailbox {
  email: string;
  name: string | null;
}

/** `Shop <shop@example.com>` into name and address (SendGrid wants them apart). */
export function parseMailbox(value: string): Mailbox {
  const match = /^\s*(?:"([^"]*)"|([^<"]*?))\s*<([^<>\s]+)>\s*$/.exec(value);
  if (match === null) return { email: value.trim(), name: null };
  const name = (match[1] ?? match[2] ?? '').trim();
  return { email: match[3]!, name: name === '' ? null : name };
}

/** Only well-formed values are kept; a malformed field is left out, never guessed. */
export function lookupEntry(fields: {
  sendKey?: unknown;
  messageId?: unknown;
  orderId?: unknown;
  acceptedAt?: unknown;
  scope?: unknown;
}): LookupEntry {
  const entry: LookupEntry = {};
  const sendKey = safeMessageId(fields.sendKey);
  if (sendKey !== null) entry.sendKey = sendKey;
  const messageId = safeMessageId(fields.messageId);
  if (messageId !== null) entry.messageId = messageId;
  // Kept as the provider said it, even when it is not an order id of ours: another system's entry is a stranger.
  const orderId = safeMessageId(fields.orderId);
  if (orderId !== null) entry.orderId = orderId;
  const scope = safeMessageId(fields.scope);
  if (scope !== null) entry.scope = scope;
  const acceptedAt =
    typeof fields.acceptedAt === 'number'
      ? new Date(fields.acceptedAt * 1000)
      : typeof fields.acceptedAt === 'string'
        ? new Date(fields.acceptedAt)
        : null;
  if (acceptedAt !== null && Number.isFinite(acceptedAt.getTime())) entry.acceptedAt = acceptedAt;
  return entry;
}
