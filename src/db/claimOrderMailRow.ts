// The claim pass sequence of DESIGN.md §4 over order_mail_log, without Temporal: the claim activity calls it
// with the token of its run, and the property test (test/property) calls it with the tokens of its racers, so
// both exercise the same statements in the same order.
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import {
  insertFirstClaim,
  readMailLog,
  reclaimFailed,
  settleDispatchedOrphan,
  takeOverUndispatchedClaim,
} from './orderMailLog';
import type { Database } from './pool';

export interface ClaimRequest {
  orderId: string;
  /** '<namespace>/<workflow id>/<run id>' of the claiming run. */
  claimToken: string;
  /** '<namespace>/<workflow id>/': shared by every run of the workflow id (rule 3). */
  workflowScope: string;
  policy: UnknownOutcomePolicy;
  /** Written into the audit rows this claim may add (takeovers, settled orphans). */
  recordedBy: string;
}

export type ClaimHow = 'first-claim' | 'reclaimed-failed' | 'took-over-undispatched' | 'own-claim';

export type ClaimDecision =
  | { kind: 'claimed'; attempt: number; how: ClaimHow }
  | { kind: 'already-sent'; outcome: 'accepted' | 'unknown' | null; attempts: number }
  | { kind: 'held-elsewhere'; holder: string }
  | { kind: 'order-not-found' };

export interface SettledOrphan {
  orphanToken: string;
  state: 'sent' | 'failed';
}

// Each pass tries the transitions in order; each is one fenced statement, so a concurrent change between them
// only makes the next pass see a different row. A handful of passes covers every interleaving that can occur.
export const MAX_CLAIM_PASSES = 5;

export class ClaimNotSettledError extends Error {
  override readonly name = 'ClaimNotSettledError';
  readonly code = 'ERR_CLAIM_NOT_SETTLED';
}

/**
 * Claims the order's mail for `claimToken`, or says why not. Throws ClaimNotSettledError when the row kept
 * changing for MAX_CLAIM_PASSES passes (the caller retries), and database errors as they come.
 */
export async function claimOrderMailRow(
  db: Database,
  request: ClaimRequest,
  onOrphanSettled: (orphan: SettledOrphan) => void = () => undefined,
): Promise<ClaimDecision> {
  const { orderId, claimToken, workflowScope } = request;
  for (let pass = 0; pass < MAX_CLAIM_PASSES; pass++) {
    let first: number | null;
    try {
      first = await insertFirstClaim(db, orderId, claimToken);
    } catch (error) {
      // 23503 foreign_key_violation: the order does not exist. Nothing was written, nothing will be sent.
      if ((error as { code?: unknown }).code === '23503') return { kind: 'order-not-found' };
      throw error;
    }
    if (first !== null) return { kind: 'claimed', attempt: first, how: 'first-claim' };

    const reclaimed = await reclaimFailed(db, orderId, claimToken);
    if (reclaimed !== null) return { kind: 'claimed', attempt: reclaimed, how: 'reclaimed-failed' };

    const takenOver = await takeOverUndispatchedClaim(db, {
      orderId,
      claimToken,
      workflowScope,
      recordedBy: request.recordedBy,
    });
    if (takenOver !== null) return { kind: 'claimed', attempt: takenOver, how: 'took-over-undispatched' };

    const orphan = await settleDispatchedOrphan(db, {
      orderId,
      claimToken,
      workflowScope,
      policy: request.policy,
      recordedBy: request.recordedBy,
    });
    if (orphan !== null) {
      onOrphanSettled(orphan);
      continue; // 'failed' is reclaimed on the next pass; 'sent' is reported as already sent.
    }

    const row = await readMailLog(db, orderId);
    if (row === null) continue;
    if (row.state === 'sending' && row.claimToken === claimToken) {
      return { kind: 'claimed', attempt: row.attempts, how: 'own-claim' };
    }
    if (row.state === 'sent') {
      return {
        kind: 'already-sent',
        outcome: row.outcome as 'accepted' | 'unknown' | null,
        attempts: row.attempts,
      };
    }
    if (row.state === 'sending' && !row.claimToken.startsWith(workflowScope)) {
      return { kind: 'held-elsewhere', holder: row.claimToken };
    }
    // The row changed under us between statements: look again.
  }
  throw new ClaimNotSettledError(
    `Could not settle the claim of order ${orderId} after ${MAX_CLAIM_PASSES} passes; retrying.`,
  );
}
