// What a claim is asked (ClaimRequest) and what it answers (ClaimDecision): the claim's contract with the claim
// activity, the property test and the bench. The claim itself is src/db/orderMailClaim.ts.
import type { LogOutcome, UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { UnknownOutcomeDecision } from '../shared/unknownOutcome';
import type { IdempotencyRetrySettings } from '../shared/workflowSettings';

/** One provider's part in judging an attempt that went to it (ClaimRequest.byProvider). */
export interface ProviderJudgement {
  idempotency: IdempotencyRetrySettings | null;
  /**
   * A closed run's attempt at this provider is handed back to verify ('verify-orphan'): the workflow handles
   * that, this provider's verification is on and the claimer has its verifier.
   */
  canVerify: boolean;
}

/** The key's window and whether to ask, for an attempt at `provider` (the row's). */
export function judgementFor(request: ClaimRequest, provider: string | null): ProviderJudgement {
  const own = provider === null ? undefined : request.byProvider?.get(provider);
  return own ?? { idempotency: request.idempotency, canVerify: request.verifyDispatchedOrphans === true };
}

export interface ClaimRequest {
  orderId: string;
  claimToken: string;
  /** '<namespace>/<workflow id>/' of the claiming run. */
  workflowScope: string;
  /** The workflow's time when it scheduled this claim (see the contract above). */
  issuedAt: Date;
  /** What an attempt left unknown becomes (src/shared/unknownOutcome.ts decides, with these). */
  policy: UnknownOutcomePolicy;
  idempotency: IdempotencyRetrySettings | null;
  sendTimeoutMs: number;
  /** Written into the audit rows this claim may add (takeovers, settlements). */
  recordedBy: string;
  /**
   * The claimer can ask the provider (the workflow, with MAIL_VERIFY on): a closed run's dispatched attempt
   * that verification could decide is then handed back as 'verify-orphan' instead of settled by the policy.
   */
  verifyDispatchedOrphans?: boolean;
  /**
   * Failover: what the claimer knows of each provider by name. A dispatched attempt is judged by the provider
   * it went to, not the first configured: a key dedupes only at the provider that saw it, so its window is
   * that provider's, and an orphan is asked about only where that provider can be asked. A provider without
   * an entry (one provider, a test's fake) is judged by `idempotency` and `verifyDispatchedOrphans`.
   */
  byProvider?: ReadonlyMap<string, ProviderJudgement>;
  /**
   * MAIL_PROVIDERS in order (the claimer's configuration): each new attempt gets one of them, chosen by the
   * failover rule (src/shared/providerChoice.ts) and written with the claim. Empty or absent: no provider is
   * named (a test's fake transport) and the row's provider stays NULL.
   */
  providers?: readonly string[];
  /**
   * MAIL_PROVIDERS_DRAINING: providers of `providers` that finish the attempts bound to them and take no new
   * ones (docs/providers.md, "Draining a provider").
   */
  draining?: readonly string[];
}

export type ClaimHow = 'first-claim' | 'reclaimed-failed' | 'took-over-undispatched' | 'own-claim';

/** Where the claimed attempt sends: the provider written into the row with the claim, and why. */
export interface ClaimedProvider {
  provider: string | null;
  providerChoice: string | null;
  /** Why, in words, for the log; absent for a claim that found its own (the row keeps only the reason). */
  providerExplanation?: string;
}

export type ClaimDecision =
  | ({ kind: 'claimed'; attempt: number; how: ClaimHow; resendCount: number } & ClaimedProvider)
  /**
   * 'resolved': an operator settled the row as sent (npm run ops -- resolve); 'legacy': the old system did
   * (an adopted row, or one its workers sent beside ours).
   */
  | {
      kind: 'already-sent';
      outcome: Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'>;
      attempts: number;
    }
  /**
   * Held by another workflow id, or last claimed by a run of this one whose claim is not older than this one:
   * this claim comes from a run that has been closed, or (equal times) cannot be ordered. Nothing changed.
   */
  | { kind: 'held-elsewhere'; holder: string; sameWorkflow: boolean }
  /**
   * A closed run of this workflow id dispatched `attempt` and never recorded it, and the provider can be asked
   * whether it arrived: nothing changed. The claimer asks (after the settle delay since that dispatch), settles
   * the attempt with the answer (settleVerifiedOrphan), then claims again.
   */
  | {
      kind: 'verify-orphan';
      attempt: number;
      holder: string;
      resendCount: number;
      sinceDispatchMs: number;
      /** Where the orphan went (the row's provider): it is asked there, on that provider's settle delay. */
      provider: string | null;
    }
  /**
   * The mail is bound to `provider` (an earlier attempt may have reached it) and the claimer is not configured
   * for it, or no provider takes new attempts: nothing changed, and the order fails at once.
   */
  | { kind: 'no-provider'; provider: string; explanation: string }
  | { kind: 'order-not-found' };

/** An attempt whose unknown outcome this claim settled (a closed run's dispatched claim, or a deferred one). */
export interface SettledAttempt {
  attempt: number;
  holder: string;
  decision: UnknownOutcomeDecision;
}

export interface ClaimObserver {
  settled(settled: SettledAttempt): void;
  /** A pass found the row changed between its read and its statement, and looks again. */
  rowChanged(): void;
}
