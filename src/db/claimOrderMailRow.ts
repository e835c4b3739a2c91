// The claim pass sequence of DESIGN.md §4 over order_mail_log, without Temporal: the claim activity calls it
// with the token of its run, and the property test (test/property) calls it with the tokens of its racers, so
// both exercise the same statements in the same order.
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import {
  type Claimant,
  insertFirstClaim,
  readMailLog,
  reclaimFailed,
  settleDispatchedOrphan,
  takeOverUndispatchedClaim,
} from './orderMailLog';
import type { Database } from './pool';

export interface ClaimRequest extends Claimant {
  orderId: string;
  /** '<namespace>/<workflow id>/': shared by every run of the workflow id (rule 3). */
  workflowScope: string;
  policy: UnknownOutcomePolicy;
  /** Written into the audit rows this claim may add (takeovers, settled orphans). */
  recordedBy: string;
}

export type ClaimHow = 'first-claim' | 'reclaimed-failed' | 'took-over-undispatched' | 'own-claim';

export type ClaimDecision =
  | { kind: 'claimed'; attempt: number; how: ClaimHow }
  /** 'resolved': an operator settled the row as sent (npm run ops -- resolve). */
  | { kind: 'already-sent'; outcome: 'accepted' | 'unknown' | 'resolved' | null; attempts: number }
  /** Held by another workflow id, or by a later run of this one (this claim comes from a closed run). */
  | { kind: 'held-elsewhere'; holder: string; staleClaim: boolean }
  | { kind: 'order-not-found' };

export interface SettledOrphan {
  orphanToken: string;
  state: 'sent' | 'failed';
}

export interface ClaimObserver {
  orphanSettled(orphan: SettledOrphan): void;
  /** A pass found the row changed between statements and looks again. */
  rowChanged(): void;
}

const NO_OBSERVER: ClaimObserver = { orphanSettled: () => undefined, rowChanged: () => undefined };

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
  observer: ClaimObserver = NO_OBSERVER,
): Promise<ClaimDecision> {
  const { orderId, claimToken, claimScheduledAt, workflowScope } = request;
  const claimant: Claimant = { claimToken, claimScheduledAt };
  for (let pass = 0; pass < MAX_CLAIM_PASSES; pass++) {
    let first: number | null;
    try {
      first = await insertFirstClaim(db, orderId, claimant);
    } catch (error) {
      // 23503 foreign_key_violation: the order does not exist. Nothing was written, nothing will be sent.
      if ((error as { code?: unknown }).code === '23503') return { kind: 'order-not-found' };
      throw error;
    }
    if (first !== null) return { kind: 'claimed', attempt: first, how: 'first-claim' };

    const reclaimed = await reclaimFailed(db, orderId, claimant);
    if (reclaimed !== null) return { kind: 'claimed', attempt: reclaimed, how: 'reclaimed-failed' };

    const takenOver = await takeOverUndispatchedClaim(db, {
      orderId,
      ...claimant,
      workflowScope,
      recordedBy: request.recordedBy,
    });
    if (takenOver !== null) return { kind: 'claimed', attempt: takenOver, how: 'took-over-undispatched' };

    const orphan = await settleDispatchedOrphan(db, {
      orderId,
      ...claimant,
      workflowScope,
      policy: request.policy,
      recordedBy: request.recordedBy,
    });
    if (orphan !== null) {
      observer.orphanSettled(orphan);
      continue; // 'failed' is reclaimed on the next pass; 'sent' is reported as already sent.
    }

    const row = await readMailLog(db, orderId);
    if (row === null) {
      observer.rowChanged();
      continue;
    }
    if (row.state === 'sending' && row.claimToken === claimToken) {
      return { kind: 'claimed', attempt: row.attempts, how: 'own-claim' };
    }
    if (row.state === 'sent') {
      return {
        kind: 'already-sent',
        outcome: row.outcome as 'accepted' | 'unknown' | 'resolved' | null,
        attempts: row.attempts,
      };
    }
    if (row.state === 'sending' && !row.claimToken.startsWith(workflowScope)) {
      return { kind: 'held-elsewhere', holder: row.claimToken, staleClaim: false };
    }
    if (
      row.claimToken !== claimToken &&
      row.claimScheduledAt !== null &&
      row.claimScheduledAt >= claimScheduledAt
    ) {
      // A later claim holds (or last held) the row, so this claim comes from a run that has been closed (reset
      // or terminated) while this attempt was executing. It must not touch the open run's row.
      return { kind: 'held-elsewhere', holder: row.claimToken, staleClaim: true };
    }
    // The row changed under us between statements: look again.
    observer.rowChanged();
  }
  throw new ClaimNotSettledError(
    `Could not settle the claim of order ${orderId} after ${MAX_CLAIM_PASSES} passes; retrying.`,
  );
}
