// The --lying-provider section of the report: every lie the sandbox's lookups told
// (packages/sandbox/src/lookupLies.ts), by kind, with how the orders it was told about were settled, read
// from their audit rows. Pure, like the rest of the report; the invariants that matter (no customer with two
// mails, no `sent` without a message, no row left `sending`) are the run's own (invariants.ts) and hold or
// fail for these orders like for any other.
import type { AttemptFact, LiesTold } from './facts';

export interface LieSection {
  /** Per kind: lookups that told it, orders it was told about, and how those orders' unknowns were settled. */
  byKind: Record<string, { told: number; orders: number; settled: Record<string, number> }>;
  told: number;
}

/** How one verified (or verification-tried) attempt ended, in words the report groups by. */
export function settlementOf(attempt: AttemptFact): string {
  if (attempt.verification === 'lookup') {
    return attempt.outcome === 'accepted' ? 'verified accepted by lookup' : 'verified not sent by lookup';
  }
  if (attempt.verification === 'webhook') return 'verified accepted by webhook';
  if (attempt.verification === 'inconclusive')
    return `inconclusive, then ${attempt.unknownPolicy ?? 'policy'}`;
  return 'no unknown outcome (nothing to verify)';
}

export function buildLieSection(told: LiesTold, attempts: AttemptFact[]): LieSection {
  const byOrder = new Map<string, AttemptFact[]>();
  for (const attempt of attempts) {
    const list = byOrder.get(attempt.orderId) ?? [];
    list.push(attempt);
    byOrder.set(attempt.orderId, list);
  }
  const byKind: LieSection['byKind'] = {};
  let total = 0;
  for (const [kind, { told: count, orderIds }] of Object.entries(told)) {
    total += count;
    const settled: Record<string, number> = {};
    for (const orderId of new Set(orderIds)) {
      const verified = (byOrder.get(orderId) ?? []).filter(
        (attempt) => attempt.verification !== null || attempt.outcome === 'unknown',
      );
      // A lie about a witness (another order's send, asked about for freshness) leaves that order unverified.
      const outcomes =
        verified.length === 0
          ? ['asked about as a witness, or its own send settled otherwise']
          : verified.map(settlementOf);
      for (const outcome of new Set(outcomes)) settled[outcome] = (settled[outcome] ?? 0) + 1;
    }
    byKind[kind] = { told: count, orders: new Set(orderIds).size, settled };
  }
  return { byKind, told: total };
}
