// THE place that decides what a possibly-accepted request becomes (docs: the outcome table, "unknown").
// Pure: the workflow calls it for its own attempt, the claim for an attempt a closed run left dispatched,
// the reconciliation sweep for the same when no run will follow. The SQL only carries out what it returns.
//
// Where the provider can be asked afterwards (src/verification/), an unknown is first verified: the decision
// is then "verify" (wait the settle delay, ask), and asked again with the answer, which settles it as verified
// accepted, verified not sent, or (inconclusive) by the policy after all. The workflow asks so for its own
// attempt and, handed back by the claim, for one a closed run left dispatched; the sweep asks before it
// decides. Without `verification` in the facts the policy decides at once. The facts of each situation are
// built in one place, src/shared/unknownOutcomeFacts.ts.
import type { UnknownOutcomePolicy, UnknownSettlement } from './mailOutcome';
import type { IdempotencyRetrySettings } from './workflowSettings';

/**
 * Provider error names that prove an earlier request with this idempotency key reached the provider and was
 * processed (Resend's 409 `invalid_idempotent_request`: the key was used before with another body). Such an
 * answer is evidence of an earlier send, so it reads as unknown; and a retry under the same key can only get
 * the same answer again, so it is never retried under the key.
 */
export const KEY_ALREADY_USED_ERRORS: ReadonlySet<string> = new Set(['invalid_idempotent_request']);

export interface UnknownOutcomeFacts {
  /** Whether the attempt passed the dispatch fence. If not, no request was made, whatever the error said. */
  dispatched: boolean;
  policy: UnknownOutcomePolicy;
  /** Set when the provider dedupes by idempotency key and retries under it are enabled. */
  idempotency: IdempotencyRetrySettings | null;
  /** Since the first request that carried the current key, on Postgres's clock; null when none did. */
  sinceKeyFirstDispatchMs: number | null;
  /** How long until a retry's request would leave (the backoff; 0 for a claim about to send). */
  delayBeforeRetryMs: number;
  /** A retry's request is over within this (the send activity's timeout). */
  sendTimeoutMs: number;
  /** Whether an attempt follows this one: this run has attempts left and is not being cancelled. */
  anotherAttemptFollows: boolean;
  /** The provider's error name for this answer, if it gave one. */
  providerError: string | null;
  /**
   * Present when the provider can be asked afterwards and the caller can wait to ask (the workflow, with
   * MAIL_VERIFY on): `answer` is null until it asked, then what the provider's lookup or webhooks said.
   */
  verification?: { answer: VerificationAnswer | null };
}

/** What asking the provider found out about the send (src/activities/verifyOrderMail.ts). */
export type VerificationAnswer =
  /** A request of this send reached the provider: its lookup shows the message, or a webhook event came. */
  (
    | { kind: 'found'; via: 'lookup' | 'webhook'; providerMessageId: string | null }
    /** The lookup has no message with the send's key, asked after the settle delay and inside the retention. */
    | { kind: 'not-found'; via: 'lookup'; sinceDispatchMs: number }
    /** Nothing to go by: the lookup kept failing past its deadline, outside retention, no access, no event. */
    | { kind: 'inconclusive'; reason: string }
  ) & {
    /** The provider was asked again after waiting (src/workflows/commands.ts): how often, and the last why. */
    waited?: { times: number; reason: string };
  };

/** How the log records that verification decided (or tried to): by a lookup, a webhook, or in vain. */
export type VerificationRecord = 'lookup' | 'webhook' | 'inconclusive';

/** What the attempt is settled as: every field the record writes. */
export type UnknownOutcomeDecision =
  /** The row proves no request was made: definitely not sent. */
  | { kind: 'not-sent'; state: 'failed'; outcome: 'not_sent'; unknownPolicy: null; verification?: undefined }
  /** Retry under the same key: the provider answers a repeat from its store, so no second mail. */
  | {
      kind: 'retry-under-key';
      state: 'failed';
      outcome: 'unknown';
      unknownPolicy: 'idempotent-retry';
      verification?: undefined;
    }
  /** The provider shows the send: sent, accepted, with the provider's id where it gave one. */
  | {
      kind: 'verified-accepted';
      state: 'sent';
      outcome: 'accepted';
      unknownPolicy: null;
      verification: 'lookup' | 'webhook';
      providerMessageId: string | null;
    }
  /** The provider's log, trusted by now, has no such send: not sent, retried through the claim and fences. */
  | {
      kind: 'verified-not-sent';
      state: 'failed';
      outcome: 'not_sent';
      unknownPolicy: null;
      verification: 'lookup';
    }
  /**
   * The configured policy settles it, and the row names the policy; `verification` is there when the provider
   * was asked and could not decide.
   */
  | {
      kind: 'policy';
      state: 'sent' | 'failed';
      outcome: 'unknown';
      unknownPolicy: UnknownOutcomePolicy;
      verification?: 'inconclusive';
    };

/** Wait the provider's settle delay on a durable timer, ask it, then decide again with its answer. */
export type UnknownOutcomeStep = UnknownOutcomeDecision | { kind: 'verify' };

/** Facts without `verification`, or with the provider's answer: their decision is a settlement. */
export type AnsweredFacts = UnknownOutcomeFacts & { verification?: { answer: VerificationAnswer } };

/**
 * Without `verification`, or with the provider's answer, the answer is always a settlement; with
 * `verification` still unanswered, it may be "verify" instead. Each situation's facts are built by one builder
 * (src/shared/unknownOutcomeFacts.ts).
 */
export function decideUnknownOutcome(facts: AnsweredFacts): UnknownOutcomeDecision;
export function decideUnknownOutcome(facts: UnknownOutcomeFacts): UnknownOutcomeStep;
export function decideUnknownOutcome(facts: UnknownOutcomeFacts): UnknownOutcomeStep {
  if (!facts.dispatched)
    return {
      kind: 'not-sent',
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
    };
  if (
    facts.anotherAttemptFollows &&
    facts.idempotency !== null &&
    !(facts.providerError !== null && KEY_ALREADY_USED_ERRORS.has(facts.providerError)) &&
    withinIdempotencyWindow(facts.idempotency, facts)
  ) {
    return {
      kind: 'retry-under-key',
      state: 'failed',
      outcome: 'unknown',
      unknownPolicy: 'idempotent-retry',
    };
  }
  const answer = facts.verification?.answer;
  if (answer === null) return { kind: 'verify' };
  if (answer?.kind === 'found') {
    return {
      kind: 'verified-accepted',
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      verification: answer.via,
      providerMessageId: answer.providerMessageId,
    };
  }
  if (answer?.kind === 'not-found') {
    return {
      kind: 'verified-not-sent',
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
      verification: 'lookup',
    };
  }
  return {
    kind: 'policy',
    state: facts.policy === 'assume-sent' ? 'sent' : 'failed',
    outcome: 'unknown',
    unknownPolicy: facts.policy,
    ...(answer === undefined ? {} : { verification: 'inconclusive' as const }),
  };
}

/**
 * Whether a retry's request still reaches the provider inside the key's window: the window counts from the
 * first request that carried the key (the provider cannot have started counting earlier), and the retry's
 * request leaves after the backoff and is over within the send timeout. The safety margin is not relied on.
 * Outside the window the provider would take the key as new and could send a second mail.
 */
export function withinIdempotencyWindow(
  idempotency: IdempotencyRetrySettings,
  timing: Pick<UnknownOutcomeFacts, 'sinceKeyFirstDispatchMs' | 'delayBeforeRetryMs' | 'sendTimeoutMs'>,
): boolean {
  if (timing.sinceKeyFirstDispatchMs === null) return false;
  return (
    timing.sinceKeyFirstDispatchMs + timing.delayBeforeRetryMs + timing.sendTimeoutMs <
    idempotency.windowMs - idempotency.safetyMarginMs
  );
}

/** What the log says about a decision, after the send's own reason, for the operator reading it. */
export function describeUnknownDecision(
  decision: UnknownOutcomeDecision,
  facts: Pick<UnknownOutcomeFacts, 'sinceKeyFirstDispatchMs' | 'idempotency' | 'verification'>,
): string {
  const answer = facts.verification?.answer ?? null;
  const waited =
    answer?.waited === undefined
      ? ''
      : `; asked ${answer.waited.times + 1} times, having waited because ${answer.waited.reason}`;
  return describeDecision(decision, facts, answer) + waited;
}

function describeDecision(
  decision: UnknownOutcomeDecision,
  facts: Pick<UnknownOutcomeFacts, 'sinceKeyFirstDispatchMs' | 'idempotency' | 'verification'>,
  answer: VerificationAnswer | null,
): string {
  switch (decision.kind) {
    case 'not-sent':
      return 'no request was made: the attempt ended before the dispatch fence';
    case 'retry-under-key':
      return (
        'retried with the same idempotency key, which the provider dedupes ' +
        `(${seconds(facts.sinceKeyFirstDispatchMs)} s after the key's first request, window ` +
        `${seconds(facts.idempotency?.windowMs ?? null)} s)`
      );
    case 'verified-accepted':
      return (
        `verified accepted: the provider's ${decision.verification === 'lookup' ? 'lookup shows' : 'webhook reported'} ` +
        `this send${decision.providerMessageId === null ? '' : ` (message id ${decision.providerMessageId})`}`
      );
    case 'verified-not-sent':
      return (
        "verified not sent: the provider's lookup has no message with this send's key " +
        `${answer?.kind === 'not-found' ? seconds(answer.sinceDispatchMs) : '?'} s after the request`
      );
    case 'policy':
      return (
        `outcome unknown, settled by policy ${decision.unknownPolicy satisfies UnknownSettlement}` +
        (answer?.kind === 'inconclusive' ? ` because verification could not decide: ${answer.reason}` : '')
      );
  }
}

function seconds(ms: number | null): string {
  return ms === null ? '?' : String(Math.round(ms / 1000));
}
