// The sweep's last step: settle one orphan with the claim's own fence.
import { log } from '@temporalio/activity';
import { settleOrphan, type OrphanSettlement } from '../db/orphans';
import type { AnsweredFacts } from '../shared/unknownOutcome';
import { OUTSIDE_WRITER, type SweepDependencies, type SweepMailSettings, type Orphan } from './sweepTypes';

export function createSettleOrphan(deps: SweepDependencies, mail: SweepMailSettings) {
  /** Settles one orphan as the sweep found it; 'changed' when the row moved meanwhile. */
  return async function settleOrphanActivity(input: {
    claim: Orphan;
    /** A swept orphan's facts (sweptOrphanFacts), with the provider's answer where the sweep asked it. */
    facts: AnsweredFacts;
  }): Promise<OrphanSettlement> {
    const { claim: orphan, facts } = input;
    const why =
      orphan.runStatus === OUTSIDE_WRITER
        ? `the old system's claim (${orphan.runId}) recorded no outcome for ${deps.settings.graceMs} ms and was settled by the reconciliation sweep`
        : `the run holding this claim (${orphan.runId}) was ${orphan.runStatus.toLowerCase()} and settled by the reconciliation sweep`;
    const result = await settleOrphan(deps.db, orphan.seen, {
      facts,
      why,
      recordedBy: `reconciliation sweep ${mail.workerIdentity}`,
    });
    log.info('Reconciliation settled an orphan', {
      orderId: orphan.orderId,
      runId: orphan.runId,
      runStatus: orphan.runStatus,
      dispatched: orphan.dispatched,
      result: result.kind,
      ...(result.kind === 'changed' ? {} : { decision: result.decision.kind }),
    });
    return result;
  };
}
