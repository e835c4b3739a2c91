import { log } from '@temporalio/activity';
import { recordOutcome, type OutcomeToRecord, type RecordResult } from '../db/orderMailRecord';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import type { ActivityDependencies } from './dependencies';

export type RecordOrderMailOutcomeInput = Omit<OutcomeToRecord, 'recordedBy'>;

/** An unknown outcome settled: verified accepted or not sent, or by a policy (after verification, or none). */
function countUnknownSettled(deps: ActivityDependencies, input: RecordOrderMailOutcomeInput): void {
  const metrics = deps.metrics ?? noOrderMailMetrics;
  const verification = input.verification ?? null;
  if (verification === 'lookup' || verification === 'webhook') {
    metrics.unknownOutcomeSettled(
      input.outcome === 'accepted' ? 'verified-accepted' : 'verified-not-sent',
      verification,
    );
  } else if (input.outcome === 'unknown' && input.unknownPolicy !== null) {
    metrics.unknownOutcomeSettled(input.unknownPolicy, verification ?? 'none');
  }
}

/** Settles the attempt as decided (db/orderMailRecord): fenced, idempotent, retried until Postgres answers. */
export function createRecordOrderMailOutcome(deps: ActivityDependencies) {
  return async function recordOrderMailOutcome(input: RecordOrderMailOutcomeInput): Promise<RecordResult> {
    const result = await recordOutcome(deps.db, { ...input, recordedBy: deps.workerIdentity });
    const fields = { orderId: input.orderId, attempt: input.attempt, outcome: input.outcome };
    switch (result.kind) {
      case 'recorded':
        // Counted once per attempt: a retried record that finds its own row already settled adds nothing.
        if (!result.alreadyRecorded) countUnknownSettled(deps, input);
        log.info('Order mail outcome recorded', {
          ...fields,
          state: result.state,
          recordedOutcome: result.outcome,
          httpStatus: input.httpStatus,
          alreadyRecorded: result.alreadyRecorded,
          lateAnswerKept: result.lateAnswerKept,
        });
        break;
      case 'claim-lost':
        log.warn("Order mail claim lost before recording; the row is someone else's now", {
          ...fields,
          currentState: result.currentState,
          lateAnswerKept: result.lateAnswerKept,
        });
        break;
      case 'dispatch-changed':
        log.warn(
          'Order mail attempt passed its dispatch fence after the outcome was decided; deciding again',
          fields,
        );
        break;
    }
    return result;
  };
}
