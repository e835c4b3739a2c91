// SendGrid's signed Event Webhook (getting-started-event-webhook-security-features): ECDSA over timestamp and
// raw body; the time window is ours, as SendGrid documents none: docs/providers.md, Webhooks.
import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
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

/** The order of P-256's group: s and n - s both verify, so a signature is taken as (r, the smaller of them). */
const P256_ORDER = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');

/** The same token however the signature is spelled, twin (r, n - s) included: docs/providers.md, Webhooks. */
export function sendGridReplayToken(signatureBytes: Buffer): string {
  const pair = ecdsaDerPair(signatureBytes);
  const canonical =
    pair === null
      ? signatureBytes
      : Buffer.concat([
          fixedWidth(pair.r),
          fixedWidth(pair.s > P256_ORDER / 2n ? P256_ORDER - pair.s : pair.s),
        ]);
  return `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
}

/** (r, s) of a DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs, short lengths as P-256 needs); else null. */
function ecdsaDerPair(bytes: Buffer): { r: bigint; s: bigint } | null {
  if (bytes.length < 8 || bytes[0] !== 0x30 || bytes[1] !== bytes.length - 2) return null;
  const integers: bigint[] = [];
  let at = 2;
  while (at < bytes.length && integers.length < 2) {
    const length = bytes[at + 1];
    if (bytes[at] !== 0x02 || length === undefined || length === 0 || length > 0x7f) return null;
    const end = at + 2 + length;
    if (end > bytes.length) return null;
    integers.push(BigInt(`0x${bytes.subarray(at + 2, end).toString('hex')}`));
    at = end;
  }
  if (integers.length !== 2 || at !== bytes.length) return null;
  return { r: integers[0]!, s: integers[1]! };
}

function fixedWidth(value: bigint): Buffer {
  return Buffer.from(value.toString(16).padStart(64, '0').slice(-64), 'hex');
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
    return {
      ok: true,
      delivery: { token: sendGridReplayToken(signatureBytes), signedAt, events, skipped },
    };
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
