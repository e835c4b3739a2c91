// The one decision of what a possibly-accepted request becomes (docs/design.md §5, "The decision"). Pure.
import { TimeoutFailure, type ActivityFailure } from '@temporalio/common';
import type { UnknownOutcomePolicy, UnknownSettlement } from './mailOutcome';
import type { IdempotencyRetrySettings } from './workflowSettings';

/** Resend's 409 `invalid_idempotent_request`: the key was used before, so a retry under it cannot help. */
export const KEY_ALREADY_USED_ERRORS: ReadonlySet<string> = new Set(['invalid_idempotent_request']);

export interface UnknownOutcomeFacts {
  /** Not past the dispatch fence: no request was made, whatever the error said. */
  dispatched: boolean;
  policy: UnknownOutcomePolicy;
  idempotency: IdempotencyRetrySettings | null;
  /** On Postgres's clock. */
  sinceKeyFirstDispatchMs: number | null;
  delayBeforeRetryMs: number;
  sendTimeoutMs: number;
  anotherAttemptFollows: boolean;
  providerError: string | null;
  /** Present where the caller can wait to ask; `answer` is null until it asked. */
  verification?: { answer: VerificationAnswer | null };
}

export type VerificationAnswer = (
  | { kind: 'found'; via: 'lookup' | 'webhook'; providerMessageId: string | null }
  | { kind: 'not-found'; via: 'lookup'; sinceDispatchMs: number }
  | { kind: 'inconclusive'; reason: string }
) & {
  waited?: { times: number; reason: string };
};

export type VerificationRecord = 'lookup' | 'webhook' | 'inconclusive';

/** A verify activity that failed for good: inconclusive, saying whether its deadline passed. */
export function inconclusiveOfFailure(failure: ActivityFailure, deadlineMs: number): VerificationAnswer {
  // Past schedule-to-close: the last try's failure (retry state TIMEOUT), or a timeout failure.
  const deadlinePassed = failure.retryState === 'TIMEOUT' || failure.cause instanceof TimeoutFailure;
  const last = failure.cause?.message ? ` (last: ${failure.cause.message})` : '';
  return {
    kind: 'inconclusive',
    reason: deadlinePassed
      ? `the lookup did not succeed within its deadline of ${Math.round(deadlineMs / 1000)} s${last}`
      : `verification failed${last}`,
  };
}

export type UnknownOutcomeDecision =
  | { kind: 'not-sent'; state: 'failed'; outcome: 'not_sent'; unknownPolicy: null; verification?: undefined }
  | {
      kind: 'retry-under-key';
      state: 'failed';
      outcome: 'unknown';
      unknownPolicy: 'idempotent-retry';
      verification?: undefined;
    }
  | {
      kind: 'verified-accepted';
      state: 'sent';
      outcome: 'accepted';
      unknownPolicy: null;
      verification: 'lookup' | 'webhook';
      providerMessageId: string | null;
    }
  | {
      kind: 'verified-not-sent';
      state: 'failed';
      outcome: 'not_sent';
      unknownPolicy: null;
      verification: 'lookup';
    }
  | {
      kind: 'policy';
      state: 'sent' | 'failed';
      outcome: 'unknown';
      unknownPolicy: UnknownOutcomePolicy;
      verification?: 'inconclusive';
    };

export type UnknownOutcomeStep = UnknownOutcomeDecision | { kind: 'verify' };

export type AnsweredFacts = UnknownOutcomeFacts & { verification?: { answer: VerificationAnswer } };

/** A settlement, or "verify" while `verification` is unanswered. */
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

/** Whether a retry's request ends inside the key's window, less the margin (docs/providers.md). */
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

/** What an unknown's decision is recorded as, the send's own reason kept beside the decision's. */
export function recordOfUnknown(
  decision: UnknownOutcomeDecision,
  facts: Pick<UnknownOutcomeFacts, 'sinceKeyFirstDispatchMs' | 'idempotency' | 'verification'>,
  sent: { httpStatus: number | null; reason: string },
) {
  const described = describeUnknownDecision(decision, facts);
  return {
    httpStatus: sent.httpStatus,
    state: decision.state,
    outcome: decision.outcome,
    unknownPolicy: decision.unknownPolicy,
    verification: decision.verification ?? null,
    providerMessageId: decision.kind === 'verified-accepted' ? decision.providerMessageId : null,
    error: decision.kind === 'not-sent' ? `${described} (${sent.reason})` : `${sent.reason}; ${described}`,
  };
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
