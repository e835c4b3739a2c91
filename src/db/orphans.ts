// A dispatched orphan: settled by a later claim, after the provider was asked, or by
// the sweep; docs/design.md §4 rule 3 and §7. The statements are in src/mailRow/statements.ts.
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type AnsweredFacts,
  type UnknownOutcomeDecision,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import { decideVerdict } from '../mailRow/decide';
import { readMailLog } from './orderMailLog';
import type { Database } from './pool';
import { releaseUndispatchedOrphan, settleDispatchedOrphan, type SeenRow } from '../mailRow/statements';

export interface VerifiedOrphan {
  orderId: string;
  /** The orphan's claim token and the attempt it dispatched, as the claim's 'verify-orphan' named them. */
  holder: string;
  attempt: number;
  /** The settling run's '<namespace>/<workflow id>/' and its own token: the holder must be another run of it. */
  workflowScope: string;
  ownToken: string;
  /** The settling workflow's time (the claim's contract): only a claim later than the holder's settles it. */
  issuedAt: Date;
  answer: VerificationAnswer;
  policy: UnknownOutcomePolicy;
  recordedBy: string;
}

/**
 * Settles a dispatched orphan with the provider's answer: read → decideVerdict (the claim's rule)
 * → its one statement. 'changed' when the row moved on meanwhile.
 */
export async function settleVerifiedOrphan(
  db: Database,
  input: VerifiedOrphan,
): Promise<{ kind: 'settled'; decision: UnknownOutcomeDecision } | { kind: 'changed' }> {
  const { orderId, workflowScope, issuedAt, policy, recordedBy } = input;
  const row = await readMailLog(db, orderId);
  const claimer = { claimToken: input.ownToken, workflowScope, issuedAt, policy };
  const verdict = { holder: input.holder, attempt: input.attempt, answer: input.answer };
  const settle = decideVerdict(row, claimer, verdict);
  if (row === null || settle === null) return { kind: 'changed' };
  const { decision, note } = settle;
  const settled = await settleDispatchedOrphan(db, row, { decision, note, recordedBy, issuedAt });
  return settled ? { kind: 'settled', decision } : { kind: 'changed' };
}

export type OrphanSettlement =
  { kind: 'released' | 'settled'; attempt: number; decision: UnknownOutcomeDecision } | { kind: 'changed' };

/**
 * The sweep's settlement of an orphan nobody took (docs/design.md §7): undispatched → released
 * failed/not_sent; dispatched → as decideUnknownOutcome says. Fenced on the token, attempt and dispatch as read.
 */
export async function settleOrphan(
  db: Database,
  seen: SeenRow,
  input: { facts: AnsweredFacts; why: string; recordedBy: string },
): Promise<OrphanSettlement> {
  const { facts } = input;
  const decision = decideUnknownOutcome(facts);
  if (decision.kind !== 'not-sent') {
    const settled =
      seen.dispatched &&
      (await settleDispatchedOrphan(db, seen, {
        decision,
        note: `${input.why} after dispatching; ${describeUnknownDecision(decision, facts)}`,
        recordedBy: input.recordedBy,
        issuedAt: null,
      }));
    return settled ? { kind: 'settled', attempt: seen.attempts, decision } : { kind: 'changed' };
  }
  const note = `${input.why} before dispatching: ${describeUnknownDecision(decision, facts)}; released, so the next claim sends it`;
  const released = await releaseUndispatchedOrphan(db, seen, { note, recordedBy: input.recordedBy });
  return released ? { kind: 'released', attempt: seen.attempts, decision } : { kind: 'changed' };
}
