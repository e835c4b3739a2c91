// SendGrid's signed Event Webhook (twilio.com/docs/sendgrid/for-developers/tracking-events/
// getting-started-event-webhook-security-features): SendGrid signs each POST with ECDSA (P-256, SHA-256) over
// the X-Twilio-Email-Event-Webhook-Timestamp header's value followed by the raw body, and sends the base64
// signature in X-Twilio-Email-Event-Webhook-Signature. We verify with the public key from Mail Settings (base64
// DER, as the console shows it, or PEM). The body is a JSON array of events; custom_args from the send come
// back as top-level fields of each event, which is how an event names its order and send.
//
// SendGrid documents no timestamp tolerance; the window is ours (WEBHOOK_MAX_AGE_MS). A redelivery is signed
// anew, so its signature is new while its events keep their sg_event_id: stored once. The very same signed
// request seen twice is a replay and refused.
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
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

const SENDGRID_SIGNATURE_HEADER = 'x-twilio-email-event-webhook-signature';
const SENDGRID_TIMESTAMP_HEADER = 'x-twilio-email-event-webhook-timestamp';

const EVENT_TYPES: Readonly<Record<string, ProviderEventType>> = {
  processed: 'accepted',
  delivered: 'delivered',
  bounce: 'bounced',
  dropped: 'dropped',
  spamreport: 'complained',
};

/** Reads the verification key as SendGrid's console shows it (base64 DER) or as PEM. Throws if unusable. */
export function sendGridPublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  const key = trimmed.includes('BEGIN PUBLIC KEY')
    ? createPublicKey(trimmed)
    : createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
  if (key.asymmetricKeyType !== 'ec')
    throw new Error('the SendGrid verification key must be an EC public key');
  return key;
}

export function readSendGridDelivery(input: {
  headers: IncomingHttpHeaders;
  rawBody: Buffer;
  publicKey: KeyObject;
  now: Date;
  maxAgeMs: number;
}): DeliveryVerdict {
  const signature = single(input.headers[SENDGRID_SIGNATURE_HEADER]);
  const timestamp = single(input.headers[SENDGRID_TIMESTAMP_HEADER]);
  if (signature === null || timestamp === null) return refused(401, 'missing signature or timestamp header');
  if (!/^[0-9]{1,12}$/.test(timestamp)) return refused(401, 'the timestamp header is not a Unix time');
  const signedAt = new Date(Number(timestamp) * 1000);
  if (!isFresh(signedAt, input.now, input.maxAgeMs)) return refused(401, 'the signature timestamp is stale');
  const signatureBytes = Buffer.from(signature, 'base64');
  const signed = Buffer.concat([Buffer.from(timestamp, 'utf8'), input.rawBody]);
  let authentic: boolean;
  try {
    authentic = signatureBytes.length > 0 && verify('sha256', signed, input.publicKey, signatureBytes);
  } catch {
    // A signature that is not DER at all.
    authentic = false;
  }
  if (!authentic) return refused(401, 'the signature does not verify');

  try {
    const { events, skipped } = parseEvents(input.rawBody, { signedAt, maxAgeMs: input.maxAgeMs });
    return { ok: true, delivery: { token: signature, signedAt, events, skipped } };
  } catch (error) {
    if (error instanceof MalformedWebhookError) return refused(400, error.message);
    throw error;
  }
}

function parseEvents(
  rawBody: Buffer,
  context: { signedAt: Date; maxAgeMs: number },
): { events: ProviderEvent[]; skipped: Skipped } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(rawBody.toString('utf8'));
  } catch {
    throw new MalformedWebhookError('the body is not JSON');
  }
  if (!Array.isArray(parsed)) throw new MalformedWebhookError('the body is not a JSON array of events');
  const events: ProviderEvent[] = [];
  const skipped: Skipped = {};
  for (const entry of parsed as unknown[]) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new MalformedWebhookError('an event is not a JSON object');
    }
    const event = entry as Record<string, unknown>;
    const orderId = orderIdOrNull(event.order_id);
    const eventType = typeof event.event === 'string' ? EVENT_TYPES[event.event] : undefined;
    // Not our mail (no order_id of ours), or an event we do not keep (open, click, deferred, unsubscribe …).
    if (orderId === null) {
      countSkip(skipped, 'not-ours');
      continue;
    }
    if (eventType === undefined) {
      countSkip(skipped, 'not-kept');
      continue;
    }
    const candidate: ProviderEvent = {
      provider: 'sendgrid',
      providerEventId: requiredEventId(event.sg_event_id),
      orderId,
      sendKey: optionalSendKey(event.send_key),
      // sg_message_id is the X-Message-Id of the send followed by '.' and a suffix; the send recorded the prefix.
      providerMessageId: optionalMessageId(
        typeof event.sg_message_id === 'string' ? event.sg_message_id.split('.')[0] : undefined,
      ),
      eventType,
      occurredAt: epochSeconds(event.timestamp),
      reason:
        eventType === 'bounced' || eventType === 'dropped'
          ? scrubbedReason(event.type, event.status, event.reason)
          : null,
    };
    const skip = whyNotOurs(candidate, context);
    if (skip === null) events.push(candidate);
    else countSkip(skipped, skip);
  }
  return { events, skipped };
}

function single(value: string | string[] | undefined): string | null {
  return typeof value === 'string' && value !== '' ? value.trim() : null;
}
