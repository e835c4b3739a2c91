// The sweep's last step: settle one stuck claim with the claim's own fence.
import { log } from '@temporalio/activity';
import { settleClosedRunClaim, type ClosedRunSettlement } from '../db/closedRunAttempt';
import type { AnsweredFacts } from '../shared/unknownOutcome';
import {
  OUTSIDE_WRITER,
  type ReconcileDependencies,
  type ReconcileMailSettings,
  type StuckClaim,
} from './reconcileTypes';

export function createSettleClosedRunClaim(deps: ReconcileDependencies, mail: ReconcileMailSettings) {
  /** Settles one closed run's claim as the sweep found it; 'changed' when the row moved meanwhile. */
  return async function settleClosedRunClaimActivity(input: {
    claim: StuckClaim;
    /** A swept orphan's facts (sweptOrphanFacts), with the provider's answer where the sweep asked it. */
    facts: AnsweredFacts;
  }): Promise<ClosedRunSettlement> {
    const { claim, facts } = input;
    const why =
      claim.runStatus === OUTSIDE_WRITER
        ? `the old system's claim (${claim.runId}) recorded no outcome for ${deps.settings.graceMs} ms and was settled by the reconciliation sweep`
        : `the run holding this claim (${claim.runId}) was ${claim.runStatus.toLowerCase()} and settled by the reconciliation sweep`;
    const result = await settleClosedRunClaim(deps.db, claim.seen, {
      facts,
      why,
      recordedBy: `reconciliation sweep ${mail.workerIdentity}`,
    });
    log.info('Reconciliation settled a claim of a closed run', {
      orderId: claim.orderId,
      runId: claim.runId,
      runStatus: claim.runStatus,
      dispatched: claim.dispatched,
      result: result.kind,
      ...(result.kind === 'changed' ? {} : { decision: result.decision.kind }),
    });
    return result;
  };
}
