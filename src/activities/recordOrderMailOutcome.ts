import { log } from '@temporalio/activity';
import { recordOutcome, type OutcomeToRecord, type RecordResult } from '../db/orderMailLog';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import type { ActivityDependencies } from './dependencies';

export type RecordOrderMailOutcomeInput = Omit<OutcomeToRecord, 'recordedBy'>;

/**
 * Settles the attempt in the log. Fenced by (claim token, attempt) and idempotent, so Temporal retries it
 * until Postgres answers. Returns what the row now says, which may be more precise than what was asked
 * (an unknown that never passed the dispatch fence is recorded as not_sent).
 */
export function createRecordOrderMailOutcome(deps: ActivityDependencies) {
  return async function recordOrderMailOutcome(input: RecordOrderMailOutcomeInput): Promise<RecordResult> {
    const result = await recordOutcome(deps.db, { ...input, recordedBy: deps.workerIdentity });
    if (result.kind === 'recorded') {
      // Counted once per attempt: a retried record that finds its own row already settled adds nothing.
      if (result.outcome === 'unknown' && !result.alreadyRecorded && input.unknownPolicy !== null) {
        (deps.metrics ?? noOrderMailMetrics).unknownOutcomeSettled(input.unknownPolicy);
      }
      log.info('Order mail outcome recorded', {
        orderId: input.orderId,
        attempt: input.attempt,
        state: result.state,
        outcome: result.outcome,
        httpStatus: input.httpStatus,
        alreadyRecorded: result.alreadyRecorded,
      });
    } else {
      log.warn("Order mail claim lost before recording; the row is someone else's now", {
        orderId: input.orderId,
        attempt: input.attempt,
        currentState: result.currentState,
      });
    }
    return result;
  };
}
