// A lookup that shows sends out of order: some messages show only `holdMs` after they were taken, while every
// later one shows at the indexing lag, so a later send (a customer's, or a witness probe) is listed before an
// earlier one. Held are every message whose request the sandbox faulted (its sender may have heard no answer:
// the unknown outcome a witness is asked about) and a seeded share of the others. This is a fact about the
// provider's index, not one answer, so it holds for every lookup while the plan is set.
//
// What a provider may do here, and how the generic gateway's watermark says it, is docs/providers.md's "What a
// witness assumes, per provider"; whether a chaos run's reordering stayed inside that is judged by the report
// (dev/demo/report/scenarioInvariants.ts, lookupReorderInvariant).
import { InvalidFaultError } from './faults';
import type { ReceivedMessage } from './records';

/**
 * The generic gateway's watermark while it reorders: 'honest' stops before the earliest message it still hides
 * (the contract kept), 'absent' gives none (the client then assumes the list is in the order taken), 'lying'
 * claims completeness past messages it hides (the contract broken, on purpose).
 */
export const REORDER_WATERMARKS = ['honest', 'absent', 'lying'] as const;
export type ReorderWatermark = (typeof REORDER_WATERMARKS)[number];

export interface LookupReorderPlan {
  /** How long after it was taken a held message first shows (in place of the indexing lag). */
  holdMs: number;
  /** Share (0 to 1) of the messages taken without a fault that are held too. */
  share: number;
  watermark: ReorderWatermark;
  seed?: number;
}

/** What the reordering did to one lookup's answer, for the lookup's record. */
export interface ReorderEffect {
  /** Messages of the provider that were taken but still held (hidden) when it answered. */
  hidden: number;
  /** Whether a message taken after a hidden one was shown: the answer was out of order. */
  outOfOrder: boolean;
  /** Generic only: the watermark it gave was at or after a hidden message's acceptance (the contract broken). */
  watermarkPastHidden: boolean;
}

export class LookupReorder {
  private plan: LookupReorderPlan | null = null;

  setPlan(input: unknown): void {
    this.plan = input === null ? null : parseLookupReorderPlan(input);
  }

  reset(): void {
    this.plan = null;
  }

  /** Whether `message` is one the index shows late. */
  holds(message: ReceivedMessage): boolean {
    if (this.plan === null) return false;
    if (message.fault !== null) return true;
    return shareOf(message.id, this.plan.seed ?? 0) < this.plan.share;
  }

  /** How old `message` must be to show, given the index's lag for everything else. */
  showsAtAgeMs(message: ReceivedMessage, lagMs: number): number {
    return this.plan !== null && this.holds(message) ? Math.max(lagMs, this.plan.holdMs) : lagMs;
  }

  /**
   * The watermark the generic gateway gives over `taken` (its messages within retention), `honestUpTo` being
   * the time up to which every message not held is indexed; null to give none.
   */
  watermark(taken: ReceivedMessage[], hidden: ReceivedMessage[], honestUpTo: Date): Date | null {
    if (this.plan === null) return honestUpTo;
    if (this.plan.watermark === 'absent') return null;
    if (this.plan.watermark === 'lying') return honestUpTo;
    const earliestHidden = Math.min(...hidden.map((message) => Date.parse(message.receivedAt)));
    return new Date(Math.min(honestUpTo.getTime(), earliestHidden - 1));
  }

  /** What this answer showed out of order, or null when no plan is set. */
  effect(shown: ReceivedMessage[], hidden: ReceivedMessage[], watermark: Date | null): ReorderEffect | null {
    if (this.plan === null) return null;
    const earliestHidden = Math.min(...hidden.map((message) => Date.parse(message.receivedAt)));
    return {
      hidden: hidden.length,
      outOfOrder: shown.some((message) => Date.parse(message.receivedAt) > earliestHidden),
      watermarkPastHidden: watermark !== null && watermark.getTime() >= earliestHidden,
    };
  }
}

/** A stable draw in [0, 1) per message id (FNV-1a), so every lookup agrees on which messages are held. */
function shareOf(id: string, seed: number): number {
  let hash = 0x811c9dc5 ^ seed;
  for (let i = 0; i < id.length; i += 1) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) / 0x1_0000_0000;
}

export function parseLookupReorderPlan(input: unknown): LookupReorderPlan {
  if (typeof input !== 'object' || input === null)
    throw new InvalidFaultError('A reorder plan must be an object.');
  const plan = input as { holdMs?: unknown; share?: unknown; watermark?: unknown; seed?: unknown };
  if (!Number.isInteger(plan.holdMs) || (plan.holdMs as number) < 0) {
    throw new InvalidFaultError('reorder: holdMs must be an integer >= 0.');
  }
  const share = plan.share ?? 0;
  if (typeof share !== 'number' || !(share >= 0 && share <= 1)) {
    throw new InvalidFaultError('reorder: share must be a number from 0 to 1.');
  }
  const watermark = plan.watermark ?? 'honest';
  if (!REORDER_WATERMARKS.includes(watermark as ReorderWatermark)) {
    throw new InvalidFaultError(`reorder: watermark must be one of ${REORDER_WATERMARKS.join(', ')}.`);
  }
  if (plan.seed !== undefined && !Number.isInteger(plan.seed)) {
    throw new InvalidFaultError('reorder: seed must be an integer.');
  }
  return {
    holdMs: plan.holdMs as number,
    share,
    watermark: watermark as ReorderWatermark,
    ...(plan.seed === undefined ? {} : { seed: plan.seed as number }),
  };
}
