// The webhook half of the --lying-provider report: every webhook lie the sandbox told
// (packages/sandbox/src/webhookLies.ts), by kind, with how the receiver settled it and how the orders it
// named were settled, and the rows the receiver's two tables hold against the events and postings it took.
// Pure, like the rest of the report; the invariant that no lie wrote a row is scenarioInvariants.ts's.
import { SES_LIE_KINDS, SES_LIES_FROM_ELSEWHERE } from '../../../packages/sandbox/src/snsLies';
import type { WebhookLiePosting } from '../../../packages/sandbox/src/webhookLies';
import { settlementOf } from './lieReport';
import type { AttemptFact, MessageFact, WebhookFacts } from './facts';

/** How the receiver settled a lie's postings, in the report's words. */
export const WEBHOOK_SETTLEMENTS = {
  refused: 'refused by the receiver (4xx), nothing written',
  skipped: 'taken (2xx), not ours: nothing stored',
  believed: 'believed: an event stored',
  kept: 'taken (2xx), kept as from another account or configuration set',
  failed: 'receiver failed (5xx or no answer), nothing written',
} as const;

export interface WebhookLieSection {
  /** Lie postings told, all kinds. */
  told: number;
  byKind: Record<
    string,
    {
      told: number;
      /** The lie's postings by how the receiver settled them. */
      receiver: Record<string, number>;
      /** Orders the lies were told about, and how those orders' unknown outcomes were settled. */
      orders: number;
      settled: Record<string, number>;
    }
  >;
  /**
   * Lies believed: postings whose event the receiver stored as ours (forged, stale), and lies from elsewhere
   * (kept) about a send SES did not take whose order an attempt then settled by webhook without a message of
   * that send key: the lie settled it.
   */
  believed: { byReceiver: number; byAnAttempt: number; orders: string[] };
  /** The genuine events and their retries as the receiver answered them (SES over SNS), or null. */
  genuine: WebhookFacts['genuine'] | null;
  rows: {
    eventRows: number;
    acceptedEvents: number;
    deliveryRows: number;
    acceptedPostings: number;
  };
}

/**
 * The events of every posting the receiver took (2xx): what its events table must hold, and nothing else. An
 * SES lie from elsewhere (kept) is stored by design, naming its account and configuration set.
 */
export function acceptedEventIds(facts: WebhookFacts): Set<string> {
  const accepted = new Set(facts.acceptedGenuineEventIds);
  for (const posting of facts.liePostings) {
    if (mayBeKept(posting)) for (const id of posting.eventIds) accepted.add(id);
    if (!posting.isLie && (posting.answer === 'skipped' || posting.answer === 'believed')) {
      for (const id of posting.eventIds) accepted.add(id);
    }
  }
  return accepted;
}

export function buildWebhookLieSection(
  facts: WebhookFacts,
  attempts: AttemptFact[],
  messages: MessageFact[] = [],
): WebhookLieSection {
  const byOrder = new Map<string, AttemptFact[]>();
  for (const attempt of attempts) {
    const list = byOrder.get(attempt.orderId) ?? [];
    list.push(attempt);
    byOrder.set(attempt.orderId, list);
  }
  const byKind: WebhookLieSection['byKind'] = {};
  let told = 0;
  for (const [kind, count] of Object.entries(facts.lies)) {
    // The SNS kinds are told only over SES; elsewhere they stay out of the report.
    if (count.posted === 0 && (SES_LIE_KINDS as readonly string[]).includes(kind)) continue;
    told += count.posted;
    const receiver: Record<string, number> = {};
    for (const answer of Object.keys(WEBHOOK_SETTLEMENTS) as (keyof typeof WEBHOOK_SETTLEMENTS)[]) {
      if (count[answer] > 0) receiver[WEBHOOK_SETTLEMENTS[answer]] = count[answer];
    }
    const orderIds = new Set(
      facts.liePostings.filter((posting) => posting.kind === kind && posting.isLie).map((p) => p.orderId),
    );
    const settled: Record<string, number> = {};
    for (const orderId of orderIds) {
      const unknowns = (byOrder.get(orderId) ?? []).filter(
        (attempt) => attempt.verification !== null || attempt.outcome === 'unknown',
      );
      const outcomes =
        unknowns.length === 0 ? ['no unknown outcome (nothing to verify)'] : unknowns.map(settlementOf);
      for (const outcome of new Set(outcomes)) settled[outcome] = (settled[outcome] ?? 0) + 1;
    }
    byKind[kind] = { told: count.posted, receiver, orders: orderIds.size, settled };
  }
  const keysTaken = new Set(messages.map((message) => message.sendKey ?? null).filter((key) => key !== null));
  const settledByLie = new Set<string>();
  let byReceiver = 0;
  for (const posting of facts.liePostings) {
    if (!posting.isLie) continue;
    if (posting.answer === 'believed') byReceiver += 1;
    if (!mayBeKept(posting) || posting.aboutNotTaken !== true) continue;
    if (posting.sendKey != null && keysTaken.has(posting.sendKey)) continue;
    const verifiedByWebhook = (byOrder.get(posting.orderId) ?? []).some(
      (attempt) => attempt.verification === 'webhook' && attempt.outcome === 'accepted',
    );
    if (verifiedByWebhook) settledByLie.add(posting.orderId);
  }
  return {
    told,
    byKind,
    believed: { byReceiver, byAnAttempt: settledByLie.size, orders: [...settledByLie].sort() },
    genuine: facts.genuine ?? null,
    rows: {
      eventRows: facts.rows.storedEventIds.length,
      acceptedEvents: acceptedEventIds(facts).size,
      deliveryRows: facts.rows.deliveryRows,
      acceptedPostings: acceptedPostings(facts),
    },
  };
}

/** Postings the receiver took (2xx), genuine and lies: at most this many replay tokens may be kept. */
export function acceptedPostings(facts: WebhookFacts): number {
  return (
    facts.acceptedGenuinePostings +
    facts.liePostings.filter(
      (posting) => posting.answer === 'skipped' || posting.answer === 'believed' || mayBeKept(posting),
    ).length
  );
}

/**
 * An SES lie from elsewhere the receiver may have kept by design: answered so (kept), or with no answer the
 * sandbox saw (failed: a 2xx lost as the receiver stopped for its outage, or past the sandbox's deadline on a
 * loaded machine), which leaves it open whether it was stored. Whether it was believed is judged apart, from
 * the attempts (buildWebhookLieSection).
 */
export function mayBeKept(posting: WebhookLiePosting): boolean {
  return (
    posting.answer === 'kept' ||
    (posting.answer === 'failed' && (SES_LIES_FROM_ELSEWHERE as readonly string[]).includes(posting.kind))
  );
}
