// Mailgun's webhooks (its securing-webhooks guide): the signature is inside the JSON, so the parse before the
// check is kept cheap and reads nothing else: docs/providers.md, Webhooks.
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  epochSeconds,
  MalformedWebhookError,
  optionalMessageId,
  optionalSendKey,
  orderIdOrNull,
  requiredEventId,
  scrubbedReason,
  type ProviderEvent,
  type ProviderEventType,
} from './normalizedEvent';
import { countSkip, whyNotOurs, type Skipped } from './ourEvent';
import { isFresh, refused, type DeliveryVerdict } from './signedDelivery';

/** Far above one Mailgun event (a few KB with its headers and variables), far below the receiver's 1 MiB. */
export const MAILGUN_MAX_BODY_BYTES = 64 * 1024;
const TOKEN = /^[\x21-\x7e]{1,200}$/;
const HEX_SIGNATURE = /^[0-9a-f]{64}$/i;
// A permanent failure Mailgun decided on itself, without trying the recipient: the mail was dropped.
const SUPPRESSED = /^(suppress-|old$)/;

export function mailgunSignature(signingKey: string, timestamp: string, token: string): string {
  return createHmac('sha256', signingKey)
    .update(timestamp + token)
    .digest('hex');
}

export function readMailgunDelivery(input: {
  rawBody: Buffer;
  signingKey: string;
  now: Date;
  maxAgeMs: number;
}): DeliveryVerdict {
  // The caller (the server) refuses a larger body with 413 before it gets here; this bounds any other caller.
  if (input.rawBody.length > MAILGUN_MAX_BODY_BYTES) {
    return refused(400, `the body is larger than a Mailgun event (${MAILGUN_MAX_BODY_BYTES} bytes)`);
  }
  const text = input.rawBody.toString('utf8');
  // Refused unparsed: what is not a JSON object, or has no signature to check.
  if (!text.trimStart().startsWith('{')) return refused(400, 'the body is not a JSON object');
  if (!text.includes('"signature"')) return refused(401, 'missing signature');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return refused(400, 'the body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return refused(400, 'the body is not a JSON object');
  }
  const { signature, 'event-data': eventData } = body as { signature?: unknown; 'event-data'?: unknown };
  const {
    timestamp,
    token,
    signature: hex,
  } = (typeof signature === 'object' && signature !== null ? signature : {}) as {
    timestamp?: unknown;
    token?: unknown;
    signature?: unknown;
  };
  const timestampText = typeof timestamp === 'number' ? String(timestamp) : timestamp;
  if (typeof timestampText !== 'string' || typeof token !== 'string' || typeof hex !== 'string') {
    return refused(401, 'missing signature');
  }
  if (!/^[0-9]{1,12}$/.test(timestampText) || !TOKEN.test(token) || !HEX_SIGNATURE.test(hex)) {
    return refused(401, 'the signature is malformed');
  }
  const signedAt = new Date(Number(timestampText) * 1000);
  if (!isFresh(signedAt, input.now, input.maxAgeMs)) return refused(401, 'the signature timestamp is stale');
  const expected = Buffer.from(mailgunSignature(input.signingKey, timestampText, token), 'hex');
  if (!timingSafeEqual(expected, Buffer.from(hex, 'hex')))
    return refused(401, 'the signature does not verify');

  try {
    const event = parseEvent(eventData);
    const skipped: Skipped = {};
    const skip =
      typeof event === 'string' ? event : whyNotOurs(event, { signedAt, maxAgeMs: input.maxAgeMs });
    if (skip !== null) countSkip(skipped, skip);
    const events = skip === null && typeof event !== 'string' ? [event] : [];
    return { ok: true, delivery: { token, signedAt, events, skipped } };
  } catch (error) {
    if (error instanceof MalformedWebhookError) return refused(400, error.message);
    throw error;
  }
}

/** The event, or why it is not one we keep (the ourEvent.ts checks come after). */
function parseEvent(value: unknown): ProviderEvent | 'not-ours' | 'not-kept' {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new MalformedWebhookError('event-data is not a JSON object');
  }
  const data = value as Record<string, unknown>;
  const variables = (
    typeof data['user-variables'] === 'object' && data['user-variables'] !== null
      ? data['user-variables']
      : {}
  ) as Record<string, unknown>;
  const orderId = orderIdOrNull(variables.order_id);
  const eventType = eventTypeOf(data);
  if (orderId === null) return 'not-ours';
  if (eventType === null) return 'not-kept';
  const headers = (data.message as { headers?: Record<string, unknown> } | undefined)?.headers;
  const messageId = headers?.['message-id'];
  const status = (data['delivery-status'] ?? {}) as Record<string, unknown>;
  return {
    provider: 'mailgun',
    providerEventId: requiredEventId(data.id),
    orderId,
    sendKey: optionalSendKey(variables.send_key),
    // The send recorded Mailgun's id as it answers it: the Message-Id in angle brackets.
    providerMessageId: optionalMessageId(
      typeof messageId === 'string' ? (messageId.startsWith('<') ? messageId : `<${messageId}>`) : undefined,
    ),
    eventType,
    occurredAt: epochSeconds(data.timestamp),
    reason:
      eventType === 'bounced' || eventType === 'dropped'
        ? scrubbedReason(data.reason, status.code, status.description, status.message)
        : null,
  };
}

/** Our event type for a Mailgun event, or null for one we do not keep (temporary failures, opens, clicks…). */
function eventTypeOf(data: Record<string, unknown>): ProviderEventType | null {
  switch (data.event) {
    case 'accepted':
      return 'accepted';
    case 'delivered':
      return 'delivered';
    case 'complained':
      return 'complained';
    case 'failed':
      // A temporary failure is retried by Mailgun; only the permanent one says what became of the mail.
      if (data.severity !== 'permanent') return null;
      return typeof data.reason === 'string' && SUPPRESSED.test(data.reason) ? 'dropped' : 'bounced';
    default:
      return null;
  }
}
