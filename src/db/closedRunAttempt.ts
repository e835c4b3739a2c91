// A closed run's dispatched attempt (an orphan): settled by a later claim, after the provider was asked, or by
// the sweep; docs/design.md §4 rule 3 and §7. The statements are in src/mailRow/statements.ts.
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type AnsweredFacts,
  type UnknownOutcomeDecision,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import { verifiedOrphanFacts } from '../shared/unknownOutcomeFacts';
import { readMailLog } from './orderMailLog';
import type { Database } from './pool';
import { releaseClosedRunUndispatched, settleClosedRunDispatched, type SeenRow } from '../mailRow/statements';

export interface VerifiedOrphan {
  orderId: string;
  /** The closed run's claim token and the attempt it dispatched, as the claim's 'verify-orphan' named them. */
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
 * Settles a closed run's dispatched attempt with the provider's answer (found → sent, not found → failed,
 * inconclusive → the policy), fenced like the claim. 'changed' when the row moved on meanwhile.
 */
export async function settleVerifiedOrphan(
  db: Database,
  input: VerifiedOrphan,
): Promise<{ kind: 'settled'; decision: UnknownOutcomeDecision } | { kind: 'changed' }> {
  const row = await readMailLog(db, input.orderId);
  if (
    row === null ||
    row.state !== 'sending' ||
    row.claimToken !== input.holder ||
    !row.claimToken.startsWith(input.workflowScope) ||
    row.claimToken === input.ownToken ||
    row.attempts !== input.attempt ||
    row.dispatchedAt === null
  ) {
    return { kind: 'changed' };
  }
  const facts = verifiedOrphanFacts({ policy: input.policy, answer: input.answer });
  const decision = decideUnknownOutcome(facts);
  const note = `the run holding this claim closed after dispatching; ${describeUnknownDecision(decision, facts)}`;
  const settled = await settleClosedRunDispatched(db, row, {
    decision,
    note,
    recordedBy: input.recordedBy,
    issuedAt: input.issuedAt,
  });
  return settled ? { kind: 'settled', decision } : { kind: 'changed' };
}

export type ClosedRunSettlement =
  { kind: 'released' | 'settled'; attempt: number; decision: UnknownOutcomeDecision } | { kind: 'changed' };

/**
 * The sweep's settlement of a closed run's claim that nobody took (docs/design.md §7): undispatched → released
 * failed/not_sent; dispatched → as decideUnknownOutcome says. Fenced on the token, attempt and dispatch as read.
 */
export async function settleClosedRunClaim(
  db: Database,
  seen: SeenRow,
  input: { facts: AnsweredFacts; why: string; recordedBy: string },
): Promise<ClosedRunSettlement> {
  const { facts } = input;
  const decision = decideUnknownOutcome(facts);
  if (decision.kind !== 'not-sent') {
    const settled =
      seen.dispatched &&
      (await settleClosedRunDispatched(db, seen, {
        decision,
        note: `${input.why} after dispatching; ${describeUnknownDecision(decision, facts)}`,
        recordedBy: input.recordedBy,
        issuedAt: null,
      }));
    return settled ? { kind: 'settled', attempt: seen.attempts, decision } : { kind: 'changed' };
  }
  const note = `${input.why} before dispatching: ${describeUnknownDecision(decision, facts)}; released, so the next claim sends it`;
  const released = await releaseClosedRunUndispatched(db, seen, { note, recordedBy: input.recordedBy });
  return released ? { kind: 'released', attempt: seen.attempts, decision } : { kind: 'changed' };
}
