// The sandbox's webhook lies, for the chaos profile (`--lying-provider`) and the receiver's tests: beside the
// genuine events of a message, requests a receiver must not believe. Each kind has the one answer a correct
// receiver gives (src/webhooks/): refused with a 4xx, or taken with nothing of it stored.
//   forged           the message's event with a signature of the wrong key              → 401
//   replayed         a genuine signed posting sent a second time, byte for byte         → 409
//                    (not a lie when the receiver failed the first: then it is a retry, webhooks.ts)
//   stale            the message's event signed an hour ago                             → 401
//   oversized        a signed body of 2 MiB                                             → 413 (or a reset)
//   malformed        a signed body that is not JSON                                     → 400
//   other-order      an event naming this order with the next order's key and message id → 2xx, stored 0
//   strangers-mixed  another system's events (its own order ids) with one of another order → 2xx, stored 0
import { randomBytes } from 'node:crypto';
import { mailgunSignature } from './providerFormats';
import type { ReceivedMessage } from './records';
import { SES_LIE_KINDS, SES_LIES_FROM_ELSEWHERE, type SesLieKind } from './snsLies';

export const WEBHOOK_LIE_KINDS = [
  'forged',
  'replayed',
  'stale',
  'oversized',
  'malformed',
  'other-order',
  'strangers-mixed',
] as const;
export type WebhookLieKind = (typeof WEBHOOK_LIE_KINDS)[number];

/** What became of the lies of one kind: how the receiver answered them. */
export interface WebhookLieCount {
  posted: number;
  /** Answered 4xx (or the connection cut, for an oversized body): refused. */
  refused: number;
  /** Answered 2xx with nothing stored: taken and skipped. */
  skipped: number;
  /** Answered 2xx with an event stored: the receiver believed a lie. */
  believed: number;
  /**
   * SES only: answered 2xx with an event stored as coming from another account or configuration set, which
   * settles no attempt where the receiver is right (whether one did is judged from the attempts, not here).
   */
  kept: number;
  /** 5xx or no answer: the receiver failed. */
  failed: number;
}

/** One posting a lie made, and what the receiver made of it. */
export interface WebhookLiePosting {
  kind: WebhookLieKind | SesLieKind;
  /** The order whose message the lie was told about. */
  orderId: string;
  /** False for a replay's genuine first posting. */
  isLie: boolean;
  eventIds: string[];
  token: string | null;
  answer: LieAnswer;
  /** SNS lies: the send key the lie named, and whether SES had answered that send without taking it. */
  sendKey?: string | null;
  aboutNotTaken?: boolean;
}

/** What the receiver answered one posting: a status and its `stored` count, or the connection cut. */
export type LieHttpAnswer = { status: number; stored: number } | 'reset';
export type LieAnswer = 'refused' | 'skipped' | 'believed' | 'kept' | 'failed';

/**
 * How one answer counts: a 4xx is refused (and a cut connection too, for an oversized body, which a receiver
 * may stop reading); a 2xx with nothing stored is taken and skipped, one that stored an event is believed;
 * anything else (5xx, a cut connection otherwise) is the receiver failing.
 */
export function lieAnswer(kind: WebhookLieKind | SesLieKind, answer: LieHttpAnswer): LieAnswer {
  if (answer === 'reset') return kind === 'oversized' ? 'refused' : 'failed';
  if (answer.status >= 400 && answer.status < 500) return 'refused';
  if (answer.status >= 200 && answer.status < 300) {
    if (answer.stored === 0) return 'skipped';
    return (SES_LIES_FROM_ELSEWHERE as readonly string[]).includes(kind) ? 'kept' : 'believed';
  }
  return 'failed';
}

export interface LieRequest {
  body: string;
  headers: Record<string, string>;
  /** False for the genuine first posting a replay repeats: only the repeat is the lie. */
  isLie: boolean;
  /** The provider event ids its body carries (none for a body that is not JSON). */
  eventIds: string[];
  /** What the receiver would keep as its replay token (Mailgun's token, SendGrid's signature), or null. */
  token: string | null;
}

export interface LieSigning {
  signSendGrid(payload: string, timestamp: number): string;
  mailgunSigningKey: string;
}

const OVERSIZED_BYTES = 2 * 1_048_576;

/** The requests of one lie about `message` (a SendGrid or Mailgun one), in the order to post them. */
export function lieRequests(
  kind: WebhookLieKind,
  message: ReceivedMessage,
  signing: LieSigning,
  now: Date,
): LieRequest[] {
  const seconds = Math.floor(now.getTime() / 1000);
  const sendgrid = message.provider === 'sendgrid';
  const otherOrder = String(BigInt(message.orderId) + 1n);
  const otherKey = message.sendKey?.replace(`/${message.orderId}/`, `/${otherOrder}/`) ?? `x/${otherOrder}`;
  const ownEvent = (overrides: Record<string, unknown> = {}) =>
    sendgrid ? sendGridEvent(message, seconds, overrides) : mailgunEvent(message, seconds, overrides);
  const signed = (
    body: string,
    at = seconds,
    eventIds: string[] = [],
    token: string | null = null,
  ): LieRequest => {
    if (!sendgrid) return { body, headers: {}, isLie: true, eventIds, token };
    const signature = signing.signSendGrid(body, at);
    return {
      body,
      headers: {
        'x-twilio-email-event-webhook-signature': signature,
        'x-twilio-email-event-webhook-timestamp': String(at),
      },
      isLie: true,
      eventIds,
      token: signature,
    };
  };
  const idOf = (event: Record<string, unknown>): string => String(sendgrid ? event.sg_event_id : event.id);
  const genuine = (
    event: Record<string, unknown>,
    at = seconds,
    key = signing.mailgunSigningKey,
  ): LieRequest => {
    if (sendgrid) return signed(JSON.stringify([event]), at, [idOf(event)]);
    const timestamp = String(at);
    const token = randomBytes(25).toString('hex');
    const body = JSON.stringify({
      signature: { timestamp, token, signature: mailgunSignature(key, timestamp, token) },
      'event-data': event,
    });
    return signed(body, at, [idOf(event)], token);
  };

  switch (kind) {
    case 'forged': {
      if (!sendgrid) return [genuine(ownEvent(), seconds, `${signing.mailgunSigningKey}-not`)];
      const request = genuine(ownEvent());
      const forged = randomBytes(71).toString('base64');
      request.headers['x-twilio-email-event-webhook-signature'] = forged;
      return [{ ...request, token: forged }];
    }
    case 'replayed': {
      const first = genuine(ownEvent());
      return [
        { ...first, isLie: false },
        { ...first, isLie: true },
      ];
    }
    case 'stale':
      return [genuine(ownEvent(), seconds - 3_600)];
    case 'oversized': {
      const padding = ' '.repeat(OVERSIZED_BYTES);
      return [sendgrid ? signed(`[${padding}]`) : signed(`{${padding}}`)];
    }
    case 'malformed':
      return [sendgrid ? signed('[{"event":"processed","order_id":') : signed('{"signature":{"token":')];
    case 'other-order': {
      const lie = sendgrid
        ? ownEvent({ send_key: otherKey, sg_message_id: `${message.id}-${otherOrder}.f` })
        : ownEvent({
            'user-variables': { order_id: message.orderId, send_key: otherKey },
            message: { headers: { 'message-id': `${otherKey}@sandbox.example` } },
          });
      return [genuine(lie)];
    }
    case 'strangers-mixed': {
      const stranger = ownEvent(
        sendgrid
          ? { order_id: `INV-${message.orderId}`, send_key: undefined }
          : { 'user-variables': { order_id: `INV-${message.orderId}` } },
      );
      if (!sendgrid) return [genuine(stranger)];
      const batch = [
        stranger,
        ownEvent({ send_key: otherKey }),
        ownEvent({ order_id: 'shop-42', send_key: 'their' }),
      ];
      return [signed(JSON.stringify(batch), seconds, batch.map(idOf))];
    }
  }
}

function sendGridEvent(
  message: ReceivedMessage,
  seconds: number,
  overrides: Record<string, unknown>,
): Record<string, unknown> {
  return {
    email: message.to,
    timestamp: seconds,
    // The one thing that is true of every message the sandbox took.
    event: 'processed',
    sg_event_id: `sbx-lie-${randomBytes(8).toString('hex')}`,
    sg_message_id: `${message.id}.sbx-filter-0`,
    order_id: message.orderId,
    ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
    ...overrides,
  };
}

function mailgunEvent(
  message: ReceivedMessage,
  seconds: number,
  overrides: Record<string, unknown>,
): Record<string, unknown> {
  return {
    event: 'accepted',
    id: `sbx-lie-${randomBytes(8).toString('hex')}`,
    timestamp: seconds,
    recipient: message.to,
    message: { headers: { 'message-id': message.id.replace(/^<|>$/g, '') } },
    'user-variables': {
      order_id: message.orderId,
      ...(message.sendKey === null ? {} : { send_key: message.sendKey }),
    },
    ...overrides,
  };
}

/** Every kind of lie, the SNS ones included, at 0. */
export function emptyLieCounts(): Record<WebhookLieKind | SesLieKind, WebhookLieCount> {
  return Object.fromEntries(
    [...WEBHOOK_LIE_KINDS, ...SES_LIE_KINDS].map((kind) => [
      kind,
      { posted: 0, refused: 0, skipped: 0, believed: 0, kept: 0, failed: 0 },
    ]),
  ) as Record<WebhookLieKind | SesLieKind, WebhookLieCount>;
}
