// The --failover part of the chaos report: per provider, the mails its sandbox received and the attempts that
// went to it; the attempts that failed over to the second provider, by the claim's reason and by what the
// previous attempt met at the primary; and the failover rule checked from the rows: no attempt went to another
// provider than an earlier attempt of its key that may have arrived.
import type { Database } from '../../src/db/pool';
import type { InvariantResult, MessageFact } from './runFacts';

export interface FailoverAttemptFact {
  orderId: string;
  attempt: number;
  resendCount: number;
  provider: string | null;
  choice: string | null;
  outcome: string;
  httpStatus: number | null;
  verification: string | null;
  error: string | null;
}

export interface FailoverSection {
  primary: string;
  outage: { atSeconds: number; forSeconds: number };
  providers: Record<string, { mailsReceived: number; attempts: Record<string, number> }>;
  failedOver: {
    attempts: number;
    /** The claim's reason (provider_choice) → attempts. */
    byReason: Record<string, number>;
    /** What the attempt before it met at the primary → attempts. */
    byCause: Record<string, number>;
  };
  /** Orders with an attempt that left a provider an earlier attempt of its key may have reached. */
  movedAfterPossibleSend: string[];
}

export async function readFailoverAttempts(db: Database, orderIds: string[]): Promise<FailoverAttemptFact[]> {
  const { rows } = await db.query<FailoverAttemptFact>(
    `SELECT order_id::text AS "orderId", attempt, resend_count AS "resendCount", provider, provider_choice AS choice,
            outcome, http_status AS "httpStatus", verification, error
       FROM order_mail_attempts WHERE order_id = ANY($1::bigint[]) ORDER BY order_id, attempt`,
    [orderIds],
  );
  return rows;
}

export function buildFailoverSection(input: {
  primary: string;
  outage: { atMs: number; forMs: number };
  attempts: FailoverAttemptFact[];
  messages: MessageFact[];
}): FailoverSection {
  const providers: FailoverSection['providers'] = {};
  const entry = (name: string) => (providers[name] ??= { mailsReceived: 0, attempts: {} });
  for (const message of input.messages) entry(message.provider ?? '(one)').mailsReceived += 1;
  for (const attempt of input.attempts)
    increment(entry(attempt.provider ?? '(not recorded)').attempts, attempt.outcome);

  const byOrder = new Map<string, FailoverAttemptFact[]>();
  for (const attempt of input.attempts) {
    const list = byOrder.get(attempt.orderId) ?? [];
    list.push(attempt);
    byOrder.set(attempt.orderId, list);
  }
  const byReason: Record<string, number> = {};
  const byCause: Record<string, number> = {};
  let failedOver = 0;
  const moved: string[] = [];
  for (const [orderId, attempts] of byOrder) {
    attempts.sort((a, b) => a.attempt - b.attempt);
    for (const [index, attempt] of attempts.entries()) {
      const sameKey = attempts
        .slice(0, index)
        .filter((earlier) => earlier.resendCount === attempt.resendCount);
      if (
        sameKey.some((earlier) => earlier.outcome !== 'not_sent' && earlier.provider !== attempt.provider)
      ) {
        if (!moved.includes(orderId)) moved.push(orderId);
      }
      if (attempt.provider === null || attempt.provider === input.primary) continue;
      failedOver += 1;
      increment(byReason, attempt.choice ?? '(not recorded)');
      increment(byCause, causeOf(sameKey.at(-1), input.primary));
    }
  }
  return {
    primary: input.primary,
    outage: { atSeconds: input.outage.atMs / 1000, forSeconds: input.outage.forMs / 1000 },
    providers,
    failedOver: { attempts: failedOver, byReason, byCause },
    movedAfterPossibleSend: moved,
  };
}

/** What the attempt before a failed-over one met: a refused connection, a status, "verified not found", … */
function causeOf(previous: FailoverAttemptFact | undefined, primary: string): string {
  if (previous === undefined) return `no earlier attempt: ${primary} skipped (failing, or by an operator)`;
  if (previous.provider !== primary)
    return `the previous attempt was not sent at ${previous.provider ?? '?'}`;
  if (previous.verification === 'lookup')
    return `${primary}: verified not found (${previous.httpStatus ?? 'no status'})`;
  if (previous.httpStatus !== null) return `${primary}: HTTP ${previous.httpStatus}`;
  const code = /\(([A-Z][A-Z0-9_]+)\)/.exec(previous.error ?? '')?.[1];
  return `${primary}: ${code ?? 'not sent'}`;
}

export function failoverInvariants(section: FailoverSection): InvariantResult[] {
  const moved = section.movedAfterPossibleSend;
  return [
    {
      name: 'never-left-a-possible-send',
      description:
        'no attempt went to another provider than an earlier attempt of its key that was not known not sent',
      holds: moved.length === 0,
      violations: moved.slice(0, 10),
      violationCount: moved.length,
    },
  ];
}

export function formatFailoverSection(section: FailoverSection): string {
  const lines = [
    '',
    `Failover (primary ${section.primary}, down ${section.outage.forSeconds} s from ${section.outage.atSeconds} s)`,
  ];
  for (const [provider, facts] of Object.entries(section.providers)) {
    const attempts = Object.entries(facts.attempts)
      .map(([outcome, count]) => `${outcome} ${count}`)
      .join(', ');
    lines.push(
      `  ${provider.padEnd(10)} mails received ${facts.mailsReceived}; attempts: ${attempts || 'none'}`,
    );
  }
  lines.push(`  attempts that failed over: ${section.failedOver.attempts}`);
  for (const [reason, count] of Object.entries(section.failedOver.byReason)) {
    lines.push(`    by the claim's reason  ${reason}: ${count}`);
  }
  for (const [cause, count] of Object.entries(section.failedOver.byCause)) {
    lines.push(`    after                  ${cause}: ${count}`);
  }
  return lines.join('\n');
}

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}
