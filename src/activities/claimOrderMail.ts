import { activityInfo, log } from '@temporalio/activity';
import type { ClaimDecision, ClaimHow, ProviderJudgement } from '../mailRow/decide';
import { claimTokenOf, workflowScopeOf } from '../db/claimToken';
import { claimOrderMailRow } from '../db/orderMailClaim';
import { DEFAULT_DEPLOYMENT_ID } from '../evidence/messageIdentity';
import { orderConfirmationSendKey } from '../mail/sendKey';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import { orderNotFoundFailure, providerNotConfiguredFailure } from '../shared/sendOutcome';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import { providerNamesOf, verifiersOf, type ActivityDependencies } from './dependencies';
import { recordResetOfRun } from './resetAct';

export interface ClaimOrderMailInput {
  orderId: string;
  /** The workflow's Date.now() at scheduling: orders one id's runs (docs/design.md §4 rule 3). */
  issuedAtMs: number;
}

export type ClaimResult =
  | {
      kind: 'claimed';
      attempt: number;
      claimToken: string;
      /** How the claim was won; 'own-claim' is a retried claim that finds the one it already made. */
      how: ClaimHow;
      /** The key this attempt's request carries; the same for every attempt until an operator re-sends. */
      idempotencyKey: string;
      /** The provider the claim chose for this attempt and why; null for a transport that names none. */
      provider?: string | null;
      providerChoice?: string | null;
      /** The worker's settings, with the chosen provider's own (its settle delay, its key's window). */
      settings: OrderMailWorkflowSettings;
    }
  | (Extract<ClaimDecision, { kind: 'already-sent' }> & { settings: OrderMailWorkflowSettings })
  | {
      /** A dispatched orphan, to be verified with the provider before it is settled. */
      kind: 'verify-orphan';
      attempt: number;
      holder: string;
      /** The key that attempt's request carried, which the provider is asked by. */
      sendKey: string;
      sinceDispatchMs: number;
      settings: OrderMailWorkflowSettings;
    }
  | {
      kind: 'held-elsewhere';
      holder: string;
      /** Another run of this workflow id whose claim is not older (equal times): see orderMailClaim.ts. */
      sameWorkflow: boolean;
      settings: OrderMailWorkflowSettings;
    };

/** The claim activity around src/db/orderMailClaim.ts: the run's own token, settings into history, metrics. */
export function createClaimOrderMail(deps: ActivityDependencies) {
  return async function claimOrderMail(input: ClaimOrderMailInput): Promise<ClaimResult> {
    const { orderId } = input;
    const info = activityInfo();
    const execution = info.workflowExecution;
    if (!execution) throw new Error('Order mail activities must run inside a workflow.');
    const { settings } = deps;
    const deploymentId = deps.deploymentId ?? DEFAULT_DEPLOYMENT_ID;
    const metrics = deps.metrics ?? noOrderMailMetrics;
    const claimToken = claimTokenOf(info.namespace, execution.workflowId, execution.runId);
    const judgements = providerJudgementsOf(deps);
    const workflowScope = workflowScopeOf(info.namespace, execution.workflowId);

    const decision = await claimOrderMailRow(
      deps.db,
      {
        orderId,
        claimToken,
        workflowScope,
        issuedAt: new Date(input.issuedAtMs),
        policy: settings.unknownOutcomePolicy,
        idempotency: settings.idempotency,
        sendTimeoutMs: settings.sendTimeoutMs,
        recordedBy: deps.workerIdentity,
        // A dispatched orphan is verified wherever this worker can ask its provider; else the policy.
        verifyDispatchedOrphans: settings.verification !== null && verifiersOf(deps).length > 0,
        byProvider: judgements,
        providers: providerNamesOf(deps),
        draining: deps.drainingProviders ?? [],
      },
      {
        settled(settled) {
          log.warn('Settled an unknown outcome left by an earlier attempt before claiming', {
            orderId,
            attempt: settled.attempt,
            holder: settled.holder,
            decision: settled.decision.kind,
            unknownPolicy: settled.decision.unknownPolicy,
          });
          if (settled.decision.kind === 'policy')
            metrics.unknownOutcomeSettled(settled.decision.unknownPolicy);
        },
        rowChanged: () => metrics.claimConflict('row-changed'),
      },
    );
    // An order's first claim follows no earlier run; any other may be a reset's, whatever it decided.
    if (
      decision.kind !== 'order-not-found' &&
      !(decision.kind === 'claimed' && decision.how === 'first-claim')
    ) {
      const reset = await recordResetOfRun(deps, {
        orderId,
        workflowId: execution.workflowId,
        runId: execution.runId,
        workflowScope,
        claimToken,
      });
      if (reset !== null)
        log.info('This run was started by a reset; recorded it as an operator act', {
          orderId,
          baseRunId: reset.baseRunId,
          reason: reset.reason,
        });
    }
    switch (decision.kind) {
      case 'order-not-found':
        throw orderNotFoundFailure(orderId);
      case 'no-provider':
        // Non-retryable: the run fails at once with this type; nothing was written (docs/design.md "Failover").
        log.error('Order mail bound to a provider this worker is not configured for; failing the order', {
          orderId,
          provider: decision.provider,
          why: decision.explanation,
        });
        metrics.orderBoundToUnconfiguredProvider(decision.provider);
        throw providerNotConfiguredFailure(orderId, decision.provider, decision.explanation);
      case 'claimed': {
        log.info('Order mail claimed', {
          orderId,
          attempt: decision.attempt,
          how: decision.how,
          provider: decision.provider,
          providerChoice: decision.providerChoice,
          ...(decision.providerExplanation === undefined ? {} : { why: decision.providerExplanation }),
        });
        if (decision.how !== 'own-claim' && decision.provider !== null) {
          metrics.providerChosen(decision.provider, decision.providerChoice ?? 'first');
        }
        return {
          kind: 'claimed',
          attempt: decision.attempt,
          how: decision.how,
          claimToken,
          idempotencyKey: orderConfirmationSendKey(deploymentId, orderId, decision.resendCount),
          ...(decision.provider === null
            ? {}
            : { provider: decision.provider, providerChoice: decision.providerChoice }),
          settings: settingsOfProvider(deps, decision.provider),
        };
      }
      case 'already-sent':
        log.info('Order mail already sent; nothing to do', {
          orderId,
          outcome: decision.outcome,
          attempts: decision.attempts,
        });
        metrics.claimConflict('already-sent');
        return { ...decision, settings };
      case 'verify-orphan':
        log.warn(
          'A closed run dispatched this order’s mail and never recorded it; asking the provider before settling',
          {
            orderId,
            attempt: decision.attempt,
            holder: decision.holder,
            sinceDispatchMs: decision.sinceDispatchMs,
          },
        );
        return {
          kind: 'verify-orphan',
          attempt: decision.attempt,
          holder: decision.holder,
          sendKey: orderConfirmationSendKey(deploymentId, orderId, decision.resendCount),
          sinceDispatchMs: decision.sinceDispatchMs,
          // The orphan's provider's: the workflow waits its settle delay and asks with its verification.
          settings: settingsOfProvider(deps, decision.provider),
        };
      case 'held-elsewhere':
        log.warn(
          decision.sameWorkflow
            ? 'Claim not later than the one holding the row (a stale claim of a closed run, or equal times)'
            : 'Order mail claim is held by another workflow',
          { orderId, holder: decision.holder },
        );
        metrics.claimConflict('held-elsewhere');
        return { ...decision, settings };
    }
  };
}

/** Each provider's key window and whether it can be asked: an attempt is judged by where it went. */
function providerJudgementsOf(deps: ActivityDependencies): ReadonlyMap<string, ProviderJudgement> {
  const verifiable = new Set(verifiersOf(deps).map((verifier) => verifier.destination.provider));
  const judgements = new Map<string, ProviderJudgement>();
  for (const [provider, settings] of deps.providerSettings ?? []) {
    judgements.set(provider, {
      idempotency: settings.idempotency,
      canVerify: settings.verification !== null && verifiable.has(provider),
    });
  }
  return judgements;
}

/** The workflow settings of the provider an attempt goes or went to; the worker's own with one provider. */
function settingsOfProvider(deps: ActivityDependencies, provider: string | null): OrderMailWorkflowSettings {
  return (provider === null ? undefined : deps.providerSettings?.get(provider)) ?? deps.settings;
}
