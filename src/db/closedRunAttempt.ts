// An attempt a closed run left behind (an orphan, docs/design.md §10) that had dispatched: its outcome is
// unknown, and nobody will record it. Three callers settle it, each with its own fence beside the row as read:
// the claim of a later run (by the policy), the claim's caller after asking the provider (settleVerifiedOrphan),
// and the reconciliation sweep for a run with no successor (settleClosedRunClaim, which also releases an
// undispatched one). Their statements (settleClosedRunDispatched, releaseClosedRunUndispatched) are in
// src/mailRow/statements.ts: each writes the row and the attempt's audit row together.
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
 * Settles the dispatched attempt of a closed run with what the provider said of it (the claim handed it back
 * as 'verify-orphan'): found → sent/accepted, with the provider's id; not found (trusted) → failed/not_sent,
 * so the next claim sends it; inconclusive → the policy, recorded as tried. Fenced like every transition of
 * the claim: still that run's claim, at that attempt, dispatched, and claimed earlier than `issuedAt`.
 * 'changed' when the row moved on meanwhile (an operator, the sweep): then the next claim reads it as it is.
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
 * The reconciliation sweep's transition (rule 3 without a successor): a 'sending' row whose holding run is
 * CLOSED (terminated, cancelled without cleanup, timed out) and that nobody claimed since. The caller asked
 * Temporal that the run is closed, and gives the facts of a swept orphan (sweptOrphanFacts, no attempt
 * following, with the provider's answer where it asked); decideUnknownOutcome decides here. The fence is the
 * claim's: the row is still held by that run's token, at the same attempt, dispatched or not as the caller
 * read it. Never dispatched ('not-sent'): released as failed/not_sent, so the next claim (an operator's retry
 * or reset) takes it at once. Dispatched: settled as the decision says (with the provider's answer where the
 * sweep asked it, else by the policy).
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
