import { log } from '@temporalio/activity';
import { claimOrderMailRow, type ClaimDecision, type ClaimHow } from '../db/claimOrderMailRow';
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
      how: ClaimHow;
      settings: OrderMailWorkflowSettings;
    }
  | (Extract<ClaimDecision, { kind: 'already-sent' }> & { settings: OrderMailWorkflowSettings })
  | { kind: 'held-elsewhere'; holder: string; settings: OrderMailWorkflowSettings };

/**
 * The claim activity: the pass sequence lives in db/claimOrderMailRow (one source for the activity and the
 * property test); this adds the run's own token, the worker's settings, metrics and the logs.
 */
export function createClaimOrderMail(deps: ActivityDependencies) {
  return async function claimOrderMail(input: { orderId: string }): Promise<ClaimResult> {
    const { orderId } = input;
    const { claimToken, workflowScope, claimScheduledAt } = currentClaimIdentity();
    const { settings } = deps;
    const metrics = deps.metrics ?? noOrderMailMetrics;

    const decision = await claimOrderMailRow(
      deps.db,
      {
        orderId,
        claimToken,
        claimScheduledAt,
        workflowScope,
        policy: settings.unknownOutcomePolicy,
        recordedBy: deps.workerIdentity,
      },
      {
        orphanSettled(orphan) {
          log.warn('Settled a dispatched claim of a closed run by policy', {
            orderId,
            orphanToken: orphan.orphanToken,
            policy: settings.unknownOutcomePolicy,
            state: orphan.state,
          });
          metrics.unknownOutcomeSettled(settings.unknownOutcomePolicy);
        },
        rowChanged: () => metrics.claimConflict('row-changed'),
      },
    );
    switch (decision.kind) {
      case 'order-not-found':
        throw orderNotFoundFailure(orderId);
      case 'claimed':
        log.info('Order mail claimed', { orderId, attempt: decision.attempt, how: decision.how });
        return { ...decision, claimToken, settings };
      case 'already-sent':
        log.info('Order mail already sent; nothing to do', {
          orderId,
          outcome: decision.outcome,
          attempts: decision.attempts,
        });
        metrics.claimConflict('already-sent');
        return { ...decision, settings };
      case 'held-elsewhere':
        log.warn(
          decision.staleClaim
            ? 'Stale claim from a closed run; the open run holds the claim'
            : 'Order mail claim is held by another workflow',
          { orderId, holder: decision.holder },
        );
        metrics.claimConflict('held-elsewhere');
        return { kind: 'held-elsewhere', holder: decision.holder, settings };
    }
  };
}
