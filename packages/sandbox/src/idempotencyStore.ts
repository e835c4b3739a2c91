// Resend's idempotency keys as the sandbox plays them (resend.com/docs/dashboard/emails/idempotency-keys):
// a request that created a message is remembered by its key for the window (24 h). Within it, the same key
// with the same body gets the first answer again and sends nothing; the same key with a different body gets
// 409 invalid_idempotent_request; the same key while the first is still being processed (a held answer)
// gets 409 concurrent_idempotent_requests. A request that created nothing leaves the key free.

import { createHash } from 'node:crypto';
import type { ProviderAnswer } from './providers/emulation';

export const RESEND_IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

interface Entry {
  fingerprint: string;
  storedAt: number;
  messageId: string;
  answer: ProviderAnswer;
  /** When processing of the first request is over (ms since epoch); null: not until `finish` is called. */
  finishedAt: number | null;
}

export type IdempotencyLookup =
  | { kind: 'new' }
  | { kind: 'replay'; answer: ProviderAnswer; messageId: string }
  | { kind: 'different-body' }
  | { kind: 'in-progress' };

export class IdempotencyStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly windowMs: number = RESEND_IDEMPOTENCY_WINDOW_MS) {}

  lookup(key: string, body: string, now: number): IdempotencyLookup {
    const entry = this.entries.get(key);
    if (entry === undefined || now - entry.storedAt >= this.windowMs) return { kind: 'new' };
    if (entry.fingerprint !== fingerprintOf(body)) return { kind: 'different-body' };
    if (entry.finishedAt === null || now < entry.finishedAt) return { kind: 'in-progress' };
    return { kind: 'replay', answer: entry.answer, messageId: entry.messageId };
  }

  /**
   * Remembers a request that created a message. `finishedAt` is when its processing is over: now for an
   * answer given (or dropped) at once, later for a held answer, null for one held until released.
   */
  remember(
    key: string,
    body: string,
    now: number,
    stored: { messageId: string; answer: ProviderAnswer; finishedAt: number | null },
  ): void {
    this.entries.set(key, { fingerprint: fingerprintOf(body), storedAt: now, ...stored });
  }

  /** The first request's processing is over (its held answer was released). */
  finish(key: string, now: number): void {
    const entry = this.entries.get(key);
    if (entry !== undefined && entry.finishedAt === null) entry.finishedAt = now;
  }

  /** Every first request still being processed is done (the sandbox released its held answers). */
  finishAll(now: number): void {
    for (const entry of this.entries.values()) if (entry.finishedAt === null) entry.finishedAt = now;
  }

  reset(): void {
    this.entries.clear();
  }
}

function fingerprintOf(body: string): string {
  return createHash('sha256').update(body).digest('hex');
}
