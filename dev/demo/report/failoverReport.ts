// The --failover section of the report: per provider, the mails its sandbox received and the attempts that went
// to it; the attempts that failed over to the second provider, by the claim's reason and by what the previous
// attempt met at the primary; and the orders whose attempts left a provider that an earlier attempt of the
// same key may have reached (the failover rule, which scenarioInvariants.ts holds the run to).
import { increment } from './customerOutcomes';
import type { FailoverAttemptFact, FailoverFacts, MessageFact } from './facts';

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

export function buildFailoverSection(input: FailoverFacts & { messages: MessageFact[] }): FailoverSection {
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
