// The one place that decides whether an authentic event is ours and may be stored: a signature proves who
// posted, not what the event says. The rules: docs/providers.md, Webhooks.
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
