import { log } from '@temporalio/activity';
import {
  type Claimant,
  insertFirstClaim,
  readMailLog,
  reclaimFailed,
  settleDispatchedOrphan,
  takeOverUndispatchedClaim,
} from '../db/orderMailLog';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import { orderNotFoundFailure } from '../shared/failures';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import { currentClaimIdentity } from './claimToken';
import type { ActivityDependencies } from './dependencies';

export type ClaimResult =
  | {
      kind: 'claimed';
      attempt: number;
      claimToken: string;
      /** How the claim was won; 'own-claim' is a retried claim that finds the one it already made. */
      how: 'first-claim' | 'reclaimed-failed' | 'took-over-undispatched' | 'own-claim';
      settings: OrderMailWorkflowSettings;
    }
  | {
      kind: 'already-sent';
      /** 'resolved': an operator settled the row as sent (npm run ops -- resolve). */
      outcome: 'accepted' | 'unknown' | 'resolved' | null;
      attempts: number;
      settings: OrderMailWorkflowSettings;
    }
  | { kind: 'held-elsewhere'; holder: string; settings: OrderMailWorkflowSettings };

// Each pass tries the transitions in order; each is one fenced statement, so a concurrent change between them
// only makes the next pass see a different row. A handful of passes covers every interleaving that can occur.
const MAX_CLAIM_PASSES = 5;

export function createClaimOrderMail(deps: ActivityDependencies) {
  return async function claimOrderMail(input: { orderId: string }): Promise<ClaimResult> {
    const { orderId } = input;
    const { claimToken, workflowScope, claimScheduledAt } = currentClaimIdentity();
    const claimant = { claimToken, claimScheduledAt };
    const { settings } = deps;
    const metrics = deps.metrics ?? noOrderMailMetrics;

    for (let pass = 0; pass < MAX_CLAIM_PASSES; pass++) {
      const first = await insertFirstClaimOrNotFound(deps, orderId, claimant);
      if (first !== null) return claimed(orderId, first, claimToken, 'first-claim', settings);

      const reclaimed = await reclaimFailed(deps.db, orderId, claimant);
      if (reclaimed !== null) return claimed(orderId, reclaimed, claimToken, 'reclaimed-failed', settings);

      const takenOver = await takeOverUndispatchedClaim(deps.db, {
        orderId,
        ...claimant,
        workflowScope,
        recordedBy: deps.workerIdentity,
      });
      if (takenOver !== null)
        return claimed(orderId, takenOver, claimToken, 'took-over-undispatched', settings);

      const orphan = await settleDispatchedOrphan(deps.db, {
        orderId,
        ...claimant,
        workflowScope,
        policy: settings.unknownOutcomePolicy,
        recordedBy: deps.workerIdentity,
      });
      if (orphan !== null) {
        log.warn('Settled a dispatched claim of a closed run by policy', {
          orderId,
          orphanToken: orphan.orphanToken,
          policy: settings.unknownOutcomePolicy,
          state: orphan.state,
        });
        metrics.unknownOutcomeSettled(settings.unknownOutcomePolicy);
        continue; // 'failed' is reclaimed on the next pass; 'sent' is reported as already sent.
      }

      const row = await readMailLog(deps.db, orderId);
      if (row === null) {
        metrics.claimConflict('row-changed');
        continue;
      }
      if (row.state === 'sending' && row.claimToken === claimToken) {
        return claimed(orderId, row.attempts, claimToken, 'own-claim', settings);
      }
      if (row.state === 'sent') {
        log.info('Order mail already sent; nothing to do', {
          orderId,
          outcome: row.outcome,
          attempts: row.attempts,
        });
        metrics.claimConflict('already-sent');
        return {
          kind: 'already-sent',
          outcome: row.outcome as 'accepted' | 'unknown' | 'resolved' | null,
          attempts: row.attempts,
          settings,
        };
      }
      if (row.state === 'sending' && !row.claimToken.startsWith(workflowScope)) {
        log.warn('Order mail claim is held by another workflow', { orderId, holder: row.claimToken });
        metrics.claimConflict('held-elsewhere');
        return { kind: 'held-elsewhere', holder: row.claimToken, settings };
      }
      if (
        row.state === 'sending' &&
        row.claimScheduledAt !== null &&
        row.claimScheduledAt >= claimScheduledAt
      ) {
        // A later run of this workflow holds the claim, so this claim comes from a run that has been closed
        // (reset or terminated) while this attempt was executing. It must not touch the open run's row.
        log.warn('Stale claim from a closed run; the open run holds the claim', {
          orderId,
          holder: row.claimToken,
        });
        return { kind: 'held-elsewhere', holder: row.claimToken, settings };
      }
      // The row changed under us between statements: look again.
      metrics.claimConflict('row-changed');
    }
    throw new Error(
      `Could not settle the claim of order ${orderId} after ${MAX_CLAIM_PASSES} passes; retrying.`,
    );
  };
}

async function insertFirstClaimOrNotFound(
  deps: ActivityDependencies,
  orderId: string,
  claimant: Claimant,
): Promise<number | null> {
  try {
    return await insertFirstClaim(deps.db, orderId, claimant);
  } catch (error) {
    // 23503 foreign_key_violation: the order does not exist. Nothing was written, nothing will be sent.
    if ((error as { code?: unknown }).code === '23503') throw orderNotFoundFailure(orderId);
    throw error;
  }
}

function claimed(
  orderId: string,
  attempt: number,
  claimToken: string,
  how: Extract<ClaimResult, { kind: 'claimed' }>['how'],
  settings: OrderMailWorkflowSettings,
): ClaimResult {
  log.info('Order mail claimed', { orderId, attempt, how });
  return { kind: 'claimed', attempt, claimToken, how, settings };
}
