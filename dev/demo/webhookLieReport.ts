// The webhook half of the --lying-provider report: every webhook lie the sandbox told (dev/sandbox/webhookLies.ts),
// by kind, with how the receiver settled it and how the orders it named were settled, and the invariant that
// no lie wrote a row: the receiver's two tables are read after the run and held against what the sandbox
// posted and what the receiver answered. Pure, like the rest of the report.
import type { WebhookLieCount, WebhookLiePosting } from '../sandbox/webhookLies';
import { settlementOf } from './lieReport';
import type { AttemptFact, InvariantResult } from './runFacts';

/** What the run's webhook path did and left behind. */
export interface WebhookFacts {
  /** Per kind of lie, its postings by the receiver's answer (the sandbox's own count). */
  lies: Record<string, WebhookLieCount>;
  /** Every posting a lie made (a replay's genuine first posting included). */
  liePostings: WebhookLiePosting[];
  /** Event ids of the sandbox's genuine postings the receiver answered 2xx (retries and duplicates included). */
  acceptedGenuineEventIds: string[];
  /** Genuine postings answered 2xx. */
  acceptedGenuinePostings: number;
  /** The receiver's tables after the run. */
  rows: {
    /** provider_event_id of every row of order_mail_provider_events the run's receiver wrote. */
    storedEventIds: string[];
    /** Rows of order_mail_webhook_deliveries (replay tokens; old ones are forgotten, so at most the postings taken). */
    deliveryRows: number;
    /** The tokens of refused or failed lie postings that are in order_mail_webhook_deliveries: none, if all is right. */
    refusedTokensStored: string[];
  };
}

/** How the receiver settled a lie's postings, in the report's words. */
export const WEBHOOK_SETTLEMENTS = {
  refused: 'refused by the receiver (4xx), nothing written',
  skipped: 'taken (2xx), not ours: nothing stored',
  believed: 'believed: an event stored',
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
  rows: {
    eventRows: number;
    acceptedEvents: number;
    deliveryRows: number;
    acceptedPostings: number;
  };
}

/** The tokens of lie postings the receiver did not take, less any a taken posting carried (a replay's first). */
export function refusedLieTokens(postings: WebhookLiePosting[]): string[] {
  const taken = new Set(
    postings
      .filter((posting) => posting.answer === 'skipped' || posting.answer === 'believed')
      .map((posting) => posting.token),
  );
  const refused = postings
    .filter((posting) => posting.answer === 'refused' || posting.answer === 'failed')
    .map((posting) => posting.token)
    .filter((token): token is string => token !== null && !taken.has(token));
  return [...new Set(refused)];
}

function acceptedEventIds(facts: WebhookFacts): Set<string> {
  const accepted = new Set(facts.acceptedGenuineEventIds);
  for (const posting of facts.liePostings) {
    if (!posting.isLie && (posting.answer === 'skipped' || posting.answer === 'believed')) {
      for (const id of posting.eventIds) accepted.add(id);
    }
  }
  return accepted;
}

export function buildWebhookLieSection(facts: WebhookFacts, attempts: AttemptFact[]): WebhookLieSection {
  const byOrder = new Map<string, AttemptFact[]>();
  for (const attempt of attempts) {
    const list = byOrder.get(attempt.orderId) ?? [];
    list.push(attempt);
    byOrder.set(attempt.orderId, list);
  }
  const byKind: WebhookLieSection['byKind'] = {};
  let told = 0;
  for (const [kind, count] of Object.entries(facts.lies)) {
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
  const acceptedPostings =
    facts.acceptedGenuinePostings +
    facts.liePostings.filter((posting) => posting.answer === 'skipped' || posting.answer === 'believed')
      .length;
  return {
    told,
    byKind,
    rows: {
      eventRows: facts.rows.storedEventIds.length,
      acceptedEvents: acceptedEventIds(facts).size,
      deliveryRows: facts.rows.deliveryRows,
      acceptedPostings,
    },
  };
}

/**
 * No refused webhook wrote a row: every stored event is one of a posting the receiver took and no lie's own,
 * every event taken is stored once, no refused lie's replay token is kept, and the token table holds no more
 * rows than postings were taken.
 */
export function noRefusedWebhookWroteARow(facts: WebhookFacts): InvariantResult {
  const accepted = acceptedEventIds(facts);
  const lieOnly = new Set(
    facts.liePostings
      .filter((posting) => posting.isLie)
      .flatMap((posting) => posting.eventIds)
      .filter((id) => !accepted.has(id)),
  );
  const stored = new Set(facts.rows.storedEventIds);
  const violations: string[] = [];
  for (const id of facts.rows.storedEventIds) {
    if (lieOnly.has(id)) violations.push(`event ${id} of a lie stored`);
    else if (!accepted.has(id)) violations.push(`event ${id} stored, but no posting of it was taken`);
  }
  if (stored.size !== facts.rows.storedEventIds.length) violations.push('an event stored twice');
  for (const id of accepted) if (!stored.has(id)) violations.push(`event ${id} taken (2xx) but not stored`);
  for (const token of facts.rows.refusedTokensStored)
    violations.push(`refused posting's token ${token} kept`);
  const acceptedPostings =
    facts.acceptedGenuinePostings +
    facts.liePostings.filter((posting) => posting.answer === 'skipped' || posting.answer === 'believed')
      .length;
  if (facts.rows.deliveryRows > acceptedPostings) {
    violations.push(`${facts.rows.deliveryRows} replay tokens kept for ${acceptedPostings} postings taken`);
  }
  return {
    name: 'no-refused-webhook-wrote-a-row',
    description:
      'no webhook the receiver refused wrote a row: its events tables hold exactly the events of postings it ' +
      'took (no lie believed), and no refused posting left a replay token',
    holds: violations.length === 0,
    violations: violations.slice(0, 10),
    violationCount: violations.length,
  };
}
