// What every signed webhook delivery comes down to, once its provider's rules are applied: refused (with the
// status to answer and why), or authentic, with the token that makes a replay recognisable and its events.
import type { Skipped } from './ourEvent';
import type { ProviderEvent } from './normalizedEvent';

export interface AuthenticDelivery {
  /** Unique per signed delivery (Mailgun's token, SendGrid's signature): seen twice means replayed. */
  token: string;
  signedAt: Date;
  /** Our events in it, each checked by src/webhooks/ourEvent.ts. */
  events: ProviderEvent[];
  /** The events left out, by why: other systems' mail, other orders' keys, insane times, types not kept. */
  skipped: Skipped;
}

export type DeliveryVerdict =
  | { ok: true; delivery: AuthenticDelivery }
  /** 400 malformed, 401 unsigned, badly signed or stale. Nothing is written. */
  | { ok: false; status: 400 | 401; problem: string };

export function refused(status: 400 | 401, problem: string): DeliveryVerdict {
  return { ok: false, status, problem };
}

/** Whether a signing time is inside the window around our clock that we accept (both directions: skew). */
export function isFresh(signedAt: Date, now: Date, maxAgeMs: number): boolean {
  return Math.abs(now.getTime() - signedAt.getTime()) <= maxAgeMs;
}
