import { activityInfo, log } from '@temporalio/activity';
import { claimTokenOf, workflowScopeOf } from '../db/claimToken';
import { settleVerifiedOrphan } from '../db/orphans';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import type { UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { UnknownOutcomeDecision, VerificationAnswer } from '../shared/unknownOutcome';
import type { ActivityDependencies } from './dependencies';

export interface SettleVerifiedOrphanInput {
  orderId: string;
  /** The orphan's claim token and attempt, as the claim's 'verify-orphan' result named them. */
  holder: string;
  attempt: number;
  answer: VerificationAnswer;
  /** The policy the claim returned (recorded in history), for an answer that decides nothing. */
  policy: UnknownOutcomePolicy;
  /** The workflow's Date.now() when it scheduled this (the claim's contract: src/db/orderMailClaim.ts). */
  issuedAtMs: number;
}

export type SettleVerifiedOrphanResult =
  { kind: 'settled'; decision: UnknownOutcomeDecision['kind'] } | { kind: 'changed' };

/** Settles a dispatched orphan by the provider's answer, fenced like the claim. */
export function createSettleVerifiedOrphan(deps: ActivityDependencies) {
  return async function settleVerifiedOrphanAttempt(
    input: SettleVerifiedOrphanInput,
  ): Promise<SettleVerifiedOrphanResult> {
    const { orderId } = input;
    const metrics = deps.metrics ?? noOrderMailMetrics;
    const info = activityInfo();
    const execution = info.workflowExecution;
    if (!execution) throw new Error('Order mail activities must run inside a workflow.');
    const result = await settleVerifiedOrphan(deps.db, {
      orderId,
      holder: input.holder,
      attempt: input.attempt,
      // Taken from the activity's context, as the claim's: only another run of this workflow id is settled.
      workflowScope: workflowScopeOf(info.namespace, execution.workflowId),
      ownToken: claimTokenOf(info.namespace, execution.workflowId, execution.runId),
      issuedAt: new Date(input.issuedAtMs),
      answer: input.answer,
      policy: input.policy,
      recordedBy: deps.workerIdentity,
    });
    if (result.kind === 'changed') {
      log.info('An orphan was settled by someone else meanwhile; claiming again', {
        orderId,
        attempt: input.attempt,
      });
      return { kind: 'changed' };
    }
    log.warn('Settled the unknown outcome a closed run left, with what the provider said', {
      orderId,
      attempt: input.attempt,
      holder: input.holder,
      decision: result.decision.kind,
      answer: input.answer.kind,
    });
    const { decision } = result;
    if (decision.kind === 'verified-accepted' || decision.kind === 'verified-not-sent') {
      metrics.unknownOutcomeSettled(decision.kind, decision.verification);
    } else if (decision.kind === 'policy') {
      metrics.unknownOutcomeSettled(decision.unknownPolicy, decision.verification ?? 'none');
    }
    return { kind: 'settled', decision: result.decision.kind };
  };
}
