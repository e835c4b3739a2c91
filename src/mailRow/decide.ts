// The claim's decisions, pure: the row as read, the request and the facts in, one step out; failover, the
// verdict, the key's window and the clock enter only as facts (docs/design.md §3).
import type { MailLogRow } from '../db/orderMailLog';
import type { LogOutcome, UnknownOutcomePolicy } from '../shared/mailOutcome';
import type { IdempotencyRetrySettings } from '../shared/workflowSettings';
import type { EarlierAttempt, NoProviderChoice, ProviderChoice } from '../shared/providerChoice';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type UnknownOutcomeDecision,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import { deferredUnknownFacts, orphanFactsAtClaim, verifiedOrphanFacts } from '../shared/unknownOutcomeFacts';
import type { TransitionName } from './transitions';

// ---- what a claim is asked, and what it answers (the contract with the claim activity and the tests) ----

/** One provider's part in judging an attempt that went to it (ClaimRequest.byProvider). */
export interface ProviderJudgement {
  idempotency: IdempotencyRetrySettings | null;
  /**
   * An orphan at this provider is handed back to verify ('verify-orphan'): the workflow handles
   * that, this provider's verification is on and the claimer has its verifier.
   */
  canVerify: boolean;
}

/** The key's window and whether to ask, for an attempt at `provider` (the row's). */
export function judgementFor(request: ClaimRequest, provider: string | null): ProviderJudgement {
  const own = provider === null ? undefined : request.byProvider?.get(provider);
  return own ?? { idempotency: request.idempotency, canVerify: request.verifyDispatchedOrphans === true };
}

/**
 * The claimer as every decision reads it, the verdict's included: its token, its run's scope, when it asked,
 * and its policy. The verify activity gives only this (decideVerdict); a claim gives a whole ClaimRequest.
 */
export interface Claimer {
  claimToken: string;
  /** '<namespace>/<workflow id>/' of the claiming run. */
  workflowScope: string;
  /** The workflow's time when it scheduled this claim (see the contract above). */
  issuedAt: Date;
  /** What an attempt left unknown becomes (src/shared/unknownOutcome.ts decides, with these). */
  policy: UnknownOutcomePolicy;
}

export interface ClaimRequest extends Claimer {
  orderId: string;
  idempotency: IdempotencyRetrySettings | null;
  sendTimeoutMs: number;
  /** Written into the audit rows this claim may add (takeovers, settlements). */
  recordedBy: string;
  /**
   * The claimer can ask the provider (MAIL_VERIFY): a dispatched orphan is handed back to
   * verify.
   */
  verifyDispatchedOrphans?: boolean;
  /**
   * Failover: what the claimer knows of each provider. An attempt is judged by the provider it went to (a key
   * dedupes only there); one without an entry by `idempotency` and `verifyDispatchedOrphans`.
   */
  byProvider?: ReadonlyMap<string, ProviderJudgement>;
  /** MAIL_PROVIDERS in order, for the failover rule; empty or absent: the row names no provider. */
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
  /** Held by another workflow id, or by a run of this one whose claim is not older: nothing changed. */
  | { kind: 'held-elsewhere'; holder: string; sameWorkflow: boolean }
  /**
   * A dispatched orphan the provider can be asked about: nothing changed; the claimer asks after
   * the settle delay, settles it (settleVerifiedOrphan) and claims again.
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
  /** Bound to a provider the claimer lacks, or none takes new attempts: nothing changed, the order fails. */
  | { kind: 'no-provider'; provider: string; explanation: string }
  | { kind: 'order-not-found' };

/** An attempt whose unknown outcome this claim settled (a dispatched orphan, or a deferred one). */
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

// ---- the decision ----

/** The columns of order_mail_log the claim decides from. */
export type ClaimRow = Pick<
  MailLogRow,
  | 'orderId'
  | 'state'
  | 'attempts'
  | 'claimToken'
  | 'claimIssuedAt'
  | 'claimedAt'
  | 'resendCount'
  | 'dispatchedAt'
  | 'outcome'
  | 'provider'
  | 'providerChoice'
>;

/** The latest unknown under the row's key, from its audit rows; null when the key has none. */
export interface UnknownUnderKey {
  unknownPolicy: string | null;
  /** The earliest dispatch of the unknown attempts under the key. */
  firstDispatchedAt: Date;
}

/** What the claim looked up besides the row. Absent: not looked up yet (decide asks for it). */
export interface ClaimFacts {
  /** Failover's answer from the key's earlier attempts plus the one `need.leftBehind` names. */
  providerChoice?: ProviderChoice | NoProviderChoice;
  unknownUnderKey?: UnknownUnderKey | null;
  /** Postgres's clock: since the key's first request; null when none was made. */
  sinceKeyFirstDispatchMs?: number | null;
  /** Postgres's clock: since the held attempt's dispatch; null when the row moved meanwhile. */
  sinceAttemptDispatchMs?: number | null;
  /** The provider's verdict on the held dispatched attempt, once asked (the verify-orphan hand-back). */
  verdict?: Verdict;
}

/** A provider's answer about one attempt: the holder's token and the attempt it dispatched. */
export interface Verdict {
  holder: string;
  attempt: number;
  answer: VerificationAnswer;
}

export type NeededFact =
  | {
      fact: 'provider-choice';
      /** Whether the key's earlier attempts are read (not for an order without a row). */
      readEarlier: boolean;
      /** The held attempt this claim leaves behind, added to the earlier ones. */
      leftBehind: EarlierAttempt | null;
    }
  | { fact: 'unknown-under-key' }
  | { fact: 'since-key-first-dispatch' }
  | { fact: 'since-attempt-dispatch' };

/** The transitions of the table (./transitions.ts) that the claim runs, with the values each one writes. */
export type ClaimTransition = (
  | { name: 'firstClaim'; claimed: ClaimedProvider }
  | { name: 'reclaimFailed'; claimed: ClaimedProvider }
  | { name: 'takeOverUndispatched'; claimed: ClaimedProvider; note: string }
  | {
      name: 'settleDeferredUnknown';
      decision: UnknownOutcomeDecision;
      dispatchedAt: Date;
      note: string;
      /** From an undispatched orphan: the note of that attempt's audit row (failed/not_sent). */
      orphanNote: string | null;
    }
  | { name: 'settleDispatchedOrphan'; decision: UnknownOutcomeDecision; note: string }
) & { name: TransitionName };

export type ClaimStep =
  | ({ kind: 'need' } & NeededFact)
  | { kind: 'run'; transition: ClaimTransition }
  | { kind: 'answer'; answer: ClaimDecision }
  /** The row moved between its read and a fact: read it again. */
  | { kind: 'read-again' };

/** 'unread': the first pass tries the insert before reading (most orders are claimed once). */
export function decideClaim(
  row: ClaimRow | null | 'unread',
  request: ClaimRequest,
  facts: ClaimFacts,
): ClaimStep {
  if (row === 'unread' || row === null) {
    const choice = facts.providerChoice;
    if (choice === undefined) return need({ fact: 'provider-choice', readEarlier: false, leftBehind: null });
    if (isNoProvider(choice)) return answer(noProvider(choice));
    return run({ name: 'firstClaim', claimed: claimedAt(choice) });
  }
  const held = decideHolder(row, request);
  if (held !== null) return held;
  if (row.state === 'failed') return decideFailed(row, request, facts);
  // 'sending', held by an earlier run of this workflow id: Temporal keeps one run of an id open, so it is closed.
  if (row.dispatchedAt === null) {
    const orphan: EarlierAttempt = { attempt: row.attempts, provider: row.provider, outcome: 'not_sent' };
    const choice = facts.providerChoice;
    if (choice === undefined) return need({ fact: 'provider-choice', readEarlier: true, leftBehind: orphan });
    if (isNoProvider(choice)) return answer(noProvider(choice));
    // The taken-over attempt would send under the key: the same rule as a failed row's reclaim.
    const orphanNote = `the run holding this claim closed before dispatching; settled by ${request.claimToken}`;
    const settle = settleExpiredKey(row, request, facts, orphanNote);
    if (settle !== null) return settle;
    const note = `the run holding this claim closed before dispatching; taken over by ${request.claimToken}`;
    return run({ name: 'takeOverUndispatched', claimed: claimedAt(choice), note });
  }
  return decideOrphan(row, request, facts);
}

/**
 * Whose the row is, the checks every decision makes first (the verdict's too). Null: a closed run of this
 * workflow id held it, and a claim issued later may move it.
 */
function decideHolder(row: ClaimRow, claimer: Claimer): ClaimStep | null {
  const { claimToken, workflowScope, issuedAt } = claimer;
  if (row.state === 'sending' && row.claimToken === claimToken) {
    return answer({
      kind: 'claimed',
      attempt: row.attempts,
      how: 'own-claim',
      resendCount: row.resendCount,
      provider: row.provider,
      providerChoice: row.providerChoice,
    });
  }
  if (row.state === 'sent') {
    return answer({ kind: 'already-sent', outcome: sentOutcome(row), attempts: row.attempts });
  }
  const sameWorkflow = row.claimToken.startsWith(workflowScope);
  if (row.state === 'sending' && !sameWorkflow) {
    return answer({ kind: 'held-elsewhere', holder: row.claimToken, sameWorkflow: false });
  }
  // Only a strictly later claim moves a row: a stale claim of a closed run leaves the open run's row alone.
  if (!(row.claimIssuedAt.getTime() < issuedAt.getTime())) {
    return answer({ kind: 'held-elsewhere', holder: row.claimToken, sameWorkflow });
  }
  return null;
}

function decideFailed(row: ClaimRow, request: ClaimRequest, facts: ClaimFacts): ClaimStep {
  // Before anything else: an unknown bound to a provider this claimer lacks is not its to settle either.
  const choice = facts.providerChoice;
  if (choice === undefined) return need({ fact: 'provider-choice', readEarlier: true, leftBehind: null });
  if (isNoProvider(choice)) return answer(noProvider(choice));
  const settle = settleExpiredKey(row, request, facts, null);
  if (settle !== null) return settle;
  return run({ name: 'reclaimFailed', claimed: claimedAt(choice) });
}

/**
 * Before a claim sends under the row's key again: an unknown left for a retry under the key whose window has
 * passed is settled by the policy instead. Null: the claim goes on.
 */
function settleExpiredKey(
  row: ClaimRow,
  request: ClaimRequest,
  facts: ClaimFacts,
  orphanNote: string | null,
): ClaimStep | null {
  if (facts.unknownUnderKey === undefined) return need({ fact: 'unknown-under-key' });
  const deferred = facts.unknownUnderKey;
  if (deferred === null || deferred.unknownPolicy !== 'idempotent-retry') return null;
  if (facts.sinceKeyFirstDispatchMs === undefined) return need({ fact: 'since-key-first-dispatch' });
  const unknownFacts = deferredUnknownFacts({
    policy: request.policy,
    // The key's window at the provider the unknown attempt went to: the row is bound there.
    idempotency: judgementFor(request, row.provider).idempotency,
    sinceKeyFirstDispatchMs: facts.sinceKeyFirstDispatchMs,
    sendTimeoutMs: request.sendTimeoutMs,
  });
  const decision = decideUnknownOutcome(unknownFacts);
  if (decision.kind !== 'policy') return null;
  const note =
    `no request made by this attempt: an earlier request under this send key (dispatched ` +
    `${deferred.firstDispatchedAt.toISOString()}) may have been accepted, and the key's window no longer ` +
    `covers a retry; ${describeUnknownDecision(decision, unknownFacts)}`;
  return run({
    name: 'settleDeferredUnknown',
    decision,
    dispatchedAt: deferred.firstDispatchedAt,
    note,
    orphanNote,
  });
}

/**
 * A dispatched orphan: judged by the provider it went to. Where that provider can say, it is
 * asked first (handed back as verify-orphan); a retry under the key needs no asking.
 */
function decideOrphan(row: ClaimRow, request: ClaimRequest, facts: ClaimFacts): ClaimStep {
  if (facts.verdict !== undefined) return settleByVerdict(row, request.policy, facts.verdict);
  const dispatched: EarlierAttempt = { attempt: row.attempts, provider: row.provider, outcome: 'unknown' };
  const choice = facts.providerChoice;
  if (choice === undefined)
    return need({ fact: 'provider-choice', readEarlier: true, leftBehind: dispatched });
  if (isNoProvider(choice)) return answer(noProvider(choice));
  if (facts.sinceKeyFirstDispatchMs === undefined) return need({ fact: 'since-key-first-dispatch' });
  const judgement = judgementFor(request, row.provider);
  const unknownFacts = orphanFactsAtClaim({
    policy: request.policy,
    idempotency: judgement.idempotency,
    sinceKeyFirstDispatchMs: facts.sinceKeyFirstDispatchMs,
    sendTimeoutMs: request.sendTimeoutMs,
    canVerify: judgement.canVerify,
  });
  const decision = decideUnknownOutcome(unknownFacts);
  if (decision.kind === 'verify') {
    if (facts.sinceAttemptDispatchMs === undefined) return need({ fact: 'since-attempt-dispatch' });
    // Null: the held attempt moved since the row was read; read again.
    if (facts.sinceAttemptDispatchMs === null) return { kind: 'read-again' };
    const { attempts: attempt, claimToken: holder, resendCount, provider } = row;
    const sinceDispatchMs = facts.sinceAttemptDispatchMs;
    return answer({ kind: 'verify-orphan', attempt, holder, resendCount, sinceDispatchMs, provider });
  }
  return settleOrphanBy(decision, describeUnknownDecision(decision, unknownFacts));
}

/** A dispatched orphan once its provider answered: the verdict settles it, by the policy where inconclusive. */
function settleByVerdict(row: ClaimRow, policy: UnknownOutcomePolicy, verdict: Verdict): ClaimStep {
  // The verdict is about one attempt: on any other the claim is asked again without it.
  if (verdict.holder !== row.claimToken || verdict.attempt !== row.attempts) return { kind: 'read-again' };
  const answered = verifiedOrphanFacts({ policy, answer: verdict.answer });
  const decision = decideUnknownOutcome(answered);
  return settleOrphanBy(decision, describeUnknownDecision(decision, answered));
}

function settleOrphanBy(decision: UnknownOutcomeDecision, why: string): ClaimStep {
  const note = `the run holding this claim closed after dispatching; ${why}`;
  return run({ name: 'settleDispatchedOrphan', decision, note });
}

export type VerdictSettlement = Extract<ClaimTransition, { name: 'settleDispatchedOrphan' }>;

/**
 * What follows a dispatched orphan once its provider answered: the claim's own holder checks and settlement
 * by the verdict, so the verify activity and the claim share one rule. Null: the row moved on (claim again).
 */
export function decideVerdict(
  row: ClaimRow | null,
  claimer: Claimer,
  verdict: Verdict,
): VerdictSettlement | null {
  if (row === null || decideHolder(row, claimer) !== null) return null;
  // A failed row or an undispatched orphan is decideClaim's to move, whatever the verdict says.
  if (row.state === 'failed' || row.dispatchedAt === null) return null;
  const step = settleByVerdict(row, claimer.policy, verdict);
  return step.kind === 'run' && step.transition.name === 'settleDispatchedOrphan' ? step.transition : null;
}

/** What the claim answers once its transition's statement ran: claimed, or read again. */
export function afterTransition(
  transition: ClaimTransition,
  result: { applied: false } | { applied: true; attempt: number },
  row: ClaimRow | null | 'unread',
): ClaimDecision | 'read-again' {
  if (!result.applied) return 'read-again';
  const resendCount = row === null || row === 'unread' ? 0 : row.resendCount;
  switch (transition.name) {
    case 'firstClaim':
      return { kind: 'claimed', attempt: 1, how: 'first-claim', resendCount, ...transition.claimed };
    case 'reclaimFailed':
      return {
        kind: 'claimed',
        attempt: result.attempt,
        how: 'reclaimed-failed',
        resendCount,
        ...transition.claimed,
      };
    case 'takeOverUndispatched':
      return {
        kind: 'claimed',
        attempt: result.attempt,
        how: 'took-over-undispatched',
        resendCount,
        ...transition.claimed,
      };
    case 'settleDeferredUnknown':
    case 'settleDispatchedOrphan':
      return 'read-again';
  }
}

export function isNoProvider(choice: ProviderChoice | NoProviderChoice): choice is NoProviderChoice {
  return choice.reason === 'bound-unconfigured' || choice.reason === 'all-draining';
}

export function claimedAt(choice: ProviderChoice): ClaimedProvider {
  return {
    provider: choice.provider,
    providerChoice: choice.provider === null ? null : choice.reason,
    providerExplanation: choice.explanation,
  };
}

export function noProvider(choice: NoProviderChoice): Extract<ClaimDecision, { kind: 'no-provider' }> {
  return { kind: 'no-provider', provider: choice.provider, explanation: choice.explanation };
}

function sentOutcome(row: ClaimRow): Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'> {
  return row.outcome as Extract<LogOutcome, 'accepted' | 'unknown' | 'resolved' | 'legacy'>;
}

function need(needed: NeededFact): ClaimStep {
  return { kind: 'need', ...needed };
}

function run(transition: ClaimTransition): ClaimStep {
  return { kind: 'run', transition };
}

function answer(decision: ClaimDecision): ClaimStep {
  return { kind: 'answer', answer: decision };
}
