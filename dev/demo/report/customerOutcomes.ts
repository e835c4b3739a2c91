// What the customers got, which is what the report leads with: per order, no mail, one, or more, counted from
// what the provider (the sandbox) accepted, whatever the log row says. "Missing" is an order whose customer got
// no mail. And every send whose outcome was unknown at the time, by how it was settled (verified by a lookup or
// a webhook, or by the policy) and, since the sandbox knows what it accepted, whether that settlement was right.
// Pure, and kept apart from report.ts so the run report's other sections can change without touching it. Its
// input is the few fields it reads of the run's facts (facts.ts), so a test can state a story in a few lines.
import { DEFAULT_DEPLOYMENT_ID } from '../../../src/evidence/messageIdentity';
import { orderConfirmationSendKey } from '../../../src/mail/sendKey';
import type { VerificationFact } from './facts';

export interface CustomerRowFact {
  orderId: string;
  state: 'sending' | 'sent' | 'failed';
  outcome: string | null;
}

export interface CustomerAttemptFact {
  orderId: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: string;
  unknownPolicy: string | null;
  /** How an unknown outcome was verified: decided by a lookup or a webhook, tried in vain, or not at all. */
  verification: VerificationFact;
  /** When the attempt was settled (order_mail_attempts.finished_at), ISO 8601. */
  finishedAt: string;
  /** Operator re-sends before this attempt (order_mail_attempts.resend_count): which send it was part of. */
  resendCount?: number;
}

export interface CustomerMessageFact {
  orderId: string;
  /** When the provider took it, ISO 8601, on the same machine's clock as Postgres. */
  receivedAt: string;
  /** The send key the message carried (src/verification/sendKey.ts); null or absent where none is known (SMTP). */
  sendKey?: string | null;
}

export interface CustomerFacts {
  orderIds: string[];
  rows: CustomerRowFact[];
  attempts: CustomerAttemptFact[];
  messages: CustomerMessageFact[];
}

/** How an unknown outcome was settled, as the report names it. */
export type Settlement =
  | 'verified accepted (lookup)'
  | 'verified accepted (webhook)'
  | 'verified not sent'
  | 'policy assume-sent'
  | 'policy assume-failed'
  | 'policy assume-sent, verification inconclusive'
  | 'policy assume-failed, verification inconclusive'
  | 'retried under the idempotency key';

export interface SettlementCount {
  attempts: number;
  /** Settled as the provider had it: "sent" when it had the mail then, "not sent" when it had none. */
  right: number;
  wrong: number;
  /** A retry under the key is neither; it is not judged. */
  notJudged: number;
}

export interface CustomerOutcomes {
  orders: number;
  customers: { none: number; one: number; twoOrMore: number };
  missing: {
    orders: number;
    /** 'state/outcome' of the row → orders, so a reader sees what the log believed about them. */
    byRow: Record<string, number>;
    examples: string[];
  };
  duplicated: { orders: number; extraMails: number; examples: string[] };
  unknowns: {
    attempts: number;
    settledBy: Partial<Record<Settlement, SettlementCount>>;
    /** Unknowns settled against the facts: a mail assumed or verified sent that never came, or the reverse. */
    wrong: number;
    /** Orders of the first few of them. */
    wrongExamples: string[];
    /** Every one of them, with how it was settled (an invariant may excuse some, by the design's known gaps). */
    wrongAttempts: { orderId: string; settlement: Settlement; verified: boolean }[];
  };
}

const EXAMPLES = 10;

export function summarizeCustomers(facts: CustomerFacts): CustomerOutcomes {
  const mails = countBy(facts.messages, (message) => message.orderId);
  const rows = new Map(facts.rows.map((row) => [row.orderId, row]));
  const customers = { none: 0, one: 0, twoOrMore: 0 };
  const missing: string[] = [];
  const byRow: Record<string, number> = {};
  const duplicated: string[] = [];
  let extraMails = 0;
  for (const orderId of facts.orderIds) {
    const count = mails.get(orderId) ?? 0;
    if (count === 0) {
      customers.none += 1;
      missing.push(orderId);
      const row = rows.get(orderId);
      increment(byRow, row === undefined ? '(no row)' : `${row.state}/${row.outcome ?? '-'}`);
    } else if (count === 1) {
      customers.one += 1;
    } else {
      customers.twoOrMore += 1;
      duplicated.push(orderId);
      extraMails += count - 1;
    }
  }

  const ordered = new Set(facts.orderIds);
  const receivedByOrder = groupBy(
    facts.messages.filter((message) => ordered.has(message.orderId)),
    (message) => message.orderId,
  );
  const settledBy: Partial<Record<Settlement, SettlementCount>> = {};
  let wrong = 0;
  const wrongExamples: string[] = [];
  const wrongAttempts: CustomerOutcomes['unknowns']['wrongAttempts'] = [];
  let attempts = 0;
  for (const attempt of facts.attempts) {
    if (!ordered.has(attempt.orderId)) continue;
    const settlement = settlementOf(attempt);
    if (settlement === null) continue;
    attempts += 1;
    const count = (settledBy[settlement] ??= { attempts: 0, right: 0, wrong: 0, notJudged: 0 });
    count.attempts += 1;
    const settledAsSent = settledAs(settlement);
    if (settledAsSent === null) {
      count.notJudged += 1;
      continue;
    }
    // Whether the provider had this send's mail when the attempt was settled. A mail of an earlier send (before
    // an operator's re-send, under another key) is not this one: the lookup rightly does not count it.
    const finishedAt = Date.parse(attempt.finishedAt);
    const key =
      attempt.resendCount === undefined
        ? null
        : orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, attempt.orderId, attempt.resendCount);
    const hadIt = (receivedByOrder.get(attempt.orderId) ?? []).some(
      (message) =>
        Date.parse(message.receivedAt) <= finishedAt &&
        (key === null || message.sendKey == null || message.sendKey === key),
    );
    if (hadIt === settledAsSent) count.right += 1;
    else {
      count.wrong += 1;
      wrong += 1;
      if (wrongExamples.length < EXAMPLES) wrongExamples.push(attempt.orderId);
      wrongAttempts.push({ orderId: attempt.orderId, settlement, verified: attempt.verification !== null });
    }
  }

  return {
    orders: facts.orderIds.length,
    customers,
    missing: { orders: missing.length, byRow, examples: missing.slice(0, EXAMPLES) },
    duplicated: { orders: duplicated.length, extraMails, examples: duplicated.slice(0, EXAMPLES) },
    unknowns: { attempts, settledBy, wrong, wrongExamples, wrongAttempts },
  };
}

/** How an attempt whose outcome was unknown at the send was settled; null when it was not unknown. */
export function settlementOf(attempt: CustomerAttemptFact): Settlement | null {
  if (attempt.verification === 'lookup' || attempt.verification === 'webhook') {
    if (attempt.outcome === 'accepted') return `verified accepted (${attempt.verification})`;
    if (attempt.outcome === 'not_sent') return 'verified not sent';
  }
  if (attempt.outcome !== 'unknown') return null;
  const inconclusive = attempt.verification === 'inconclusive' ? ', verification inconclusive' : '';
  switch (attempt.unknownPolicy) {
    case 'assume-sent':
      return `policy assume-sent${inconclusive}` as Settlement;
    case 'assume-failed':
      return `policy assume-failed${inconclusive}` as Settlement;
    case 'idempotent-retry':
      return 'retried under the idempotency key';
    default:
      return null;
  }
}

/** True when the settlement said "sent", false for "not sent", null when it said neither. */
function settledAs(settlement: Settlement): boolean | null {
  if (settlement.startsWith('verified accepted') || settlement.startsWith('policy assume-sent')) return true;
  if (settlement === 'verified not sent' || settlement.startsWith('policy assume-failed')) return false;
  return null;
}

function countBy<T>(items: T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

export function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/** One more of `key` in a tally of the report. */
export function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}
