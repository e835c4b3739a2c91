// Whether an authentic delivery's event is one of ours that may be stored (issue 22): the one place that
// decides it, for both providers. A signature proves who posted, not what the event says: Mailgun signs only
// its timestamp and token, and a SendGrid account may carry other systems' mail. So an event is stored only
// when what it says agrees with itself:
//   - its send key is one of ours and names the very order the event names (src/mail/idempotencyKey.ts:
//     order-confirmation/[<deployment>/]<order>[/<resend count>]);
//   - where we chose the message id ourselves (Mailgun's Message-Id, made from the send key), it is the one
//     that key makes;
//   - its time is sane: not after the signature (beyond the clock window), not older than a provider retries
//     a webhook (SendGrid for 72 hours, Mailgun for 8).
// Anything else is skipped and counted by why; the delivery is still answered 2xx, so a provider does not
// redeliver a batch forever for one stranger in it. Whether a stored event settles anything is decided where
// it is read (src/evidence/): message id equal to ours, time at or after the dispatch.
import { mailgunMessageIdLocalPart } from '../evidence/messageIdentity';
import type { ProviderEvent } from './normalizedEvent';

export type SkipReason =
  /** No order id or send key of ours: another system's mail, or an event type we do not keep. */
  | 'not-ours'
  /** Names one order and carries another's send key or message id. */
  | 'other-order'
  /** Dated before a provider could still be retrying it, or after its own signature. */
  | 'time'
  /** Our mail, but an event we do not keep (open, click, deferred, a temporary failure). */
  | 'not-kept';

export type Skipped = Partial<Record<SkipReason, number>>;

/** A provider retries a webhook for at most 72 hours (SendGrid); a day more for slow queues. */
const OLDEST_EVENT_MS = 4 * 24 * 3_600_000;
const SEND_KEY_PREFIX = 'order-confirmation/';
const DIGITS = /^[0-9]{1,19}$/;

/** The order a send key of ours names, or null when it is not one of ours. */
function orderOfSendKey(sendKey: string): string | null {
  if (!sendKey.startsWith(SEND_KEY_PREFIX)) return null;
  const parts = sendKey.slice(SEND_KEY_PREFIX.length).split('/');
  // [order], [order, resend count] (before deployment ids), [deployment, order, resend count].
  const orderId = parts.length === 3 ? parts[1] : parts[0];
  const resendCount = parts.length === 3 ? parts[2] : parts[1];
  if (parts.length > 3 || orderId === undefined || !DIGITS.test(orderId)) return null;
  if (resendCount !== undefined && !DIGITS.test(resendCount)) return null;
  return orderId;
}

export function whyNotOurs(
  event: ProviderEvent,
  context: { signedAt: Date; maxAgeMs: number },
): SkipReason | null {
  if (event.sendKey === null) return 'not-ours';
  const keyOrder = orderOfSendKey(event.sendKey);
  if (keyOrder === null) return 'not-ours';
  if (keyOrder !== event.orderId) return 'other-order';
  if (event.provider === 'mailgun') {
    const id = event.providerMessageId?.replace(/^<|>$/g, '') ?? '';
    if (!id.startsWith(`${mailgunMessageIdLocalPart(event.sendKey)}@`)) return 'other-order';
  }
  const at = event.occurredAt.getTime();
  const signed = context.signedAt.getTime();
  if (at > signed + context.maxAgeMs || at < signed - OLDEST_EVENT_MS) return 'time';
  return null;
}

export function countSkip(skipped: Skipped, reason: SkipReason): void {
  skipped[reason] = (skipped[reason] ?? 0) + 1;
}

export function skippedTotal(skipped: Skipped): number {
  return Object.values(skipped).reduce((sum, count) => sum + count, 0);
}
