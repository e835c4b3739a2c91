// The facts an unknown is decided from, one builder per situation (docs/design.md §5, "The decision"). Pure.
import type { AfterAttempt, IdempotencyRetrySettings, OrderMailWorkflowSettings } from './workflowSettings';
import type { UnknownOutcomePolicy } from './mailOutcome';
import type { AnsweredFacts, UnknownOutcomeFacts, VerificationAnswer } from './unknownOutcome';

export interface AttemptOnRecord {
  dispatched: boolean;
  sinceKeyFirstDispatchMs: number | null;
}

/** No retry under the key follows: no times, and a zero stands for nothing measured. */
const NO_RETRY_UNDER_KEY = {
  idempotency: null,
  sinceKeyFirstDispatchMs: null,
  delayBeforeRetryMs: 0,
  sendTimeoutMs: 0,
} as const;

/** Only the run that sent saw the provider's answer; a deferred unknown's was weighed when left for the key. */
const NO_PROVIDER_ERROR = null;

/** The run's own unknown attempt: a retry would follow after its backoff, only with attempts left. */
export function ownAttemptFacts(input: {
  attempt: AttemptOnRecord;
  settings: Pick<
    OrderMailWorkflowSettings,
    'unknownOutcomePolicy' | 'idempotency' | 'sendTimeoutMs' | 'verification'
  >;
  delayBeforeRetryMs: number;
  anotherAttemptFollows: boolean;
  providerError: string | null;
  answer: VerificationAnswer | null;
}): UnknownOutcomeFacts {
  const { attempt, settings } = input;
  return {
    dispatched: attempt.dispatched,
    policy: settings.unknownOutcomePolicy,
    idempotency: settings.idempotency,
    sinceKeyFirstDispatchMs: attempt.sinceKeyFirstDispatchMs,
    delayBeforeRetryMs: input.delayBeforeRetryMs,
    sendTimeoutMs: settings.sendTimeoutMs,
    anotherAttemptFollows: input.anotherAttemptFollows,
    providerError: input.providerError,
    ...(settings.verification === null ? {} : { verification: { answer: input.answer } }),
  };
}

/** What follows the run's own attempt (afterAttempt; null: the run was cancelled), as its facts name it. */
export function retryFollowing(next: AfterAttempt | null) {
  const retry = next?.kind === 'retry' ? next : null;
  return { delayBeforeRetryMs: retry?.delayMs ?? 0, anotherAttemptFollows: retry !== null };
}

/** A dispatched orphan at the claim; the window is its own provider's (a key dedupes only there). */
export function orphanFactsAtClaim(input: {
  policy: UnknownOutcomePolicy;
  idempotency: IdempotencyRetrySettings | null;
  sinceKeyFirstDispatchMs: number | null;
  sendTimeoutMs: number;
  canVerify: boolean;
}): UnknownOutcomeFacts {
  return {
    dispatched: true,
    policy: input.policy,
    idempotency: input.idempotency,
    sinceKeyFirstDispatchMs: input.sinceKeyFirstDispatchMs,
    delayBeforeRetryMs: 0,
    sendTimeoutMs: input.sendTimeoutMs,
    anotherAttemptFollows: true,
    providerError: NO_PROVIDER_ERROR,
    ...(input.canVerify ? { verification: { answer: null } } : {}),
  };
}

/** Handed back only on "verify", so no retry under the key: the window only closes while the run waits. */
export function verifiedOrphanFacts(input: {
  policy: UnknownOutcomePolicy;
  answer: VerificationAnswer;
}): AnsweredFacts {
  return {
    dispatched: true,
    policy: input.policy,
    ...NO_RETRY_UNDER_KEY,
    anotherAttemptFollows: true,
    providerError: NO_PROVIDER_ERROR,
    verification: { answer: input.answer },
  };
}

/** An unknown left for a retry under the key, found by the next claim: the window, else the policy, decides. */
export function deferredUnknownFacts(input: {
  policy: UnknownOutcomePolicy;
  idempotency: IdempotencyRetrySettings | null;
  sinceKeyFirstDispatchMs: number | null;
  sendTimeoutMs: number;
}): AnsweredFacts {
  return {
    dispatched: true,
    policy: input.policy,
    idempotency: input.idempotency,
    sinceKeyFirstDispatchMs: input.sinceKeyFirstDispatchMs,
    delayBeforeRetryMs: 0,
    sendTimeoutMs: input.sendTimeoutMs,
    anotherAttemptFollows: true,
    providerError: NO_PROVIDER_ERROR,
  };
}

/** The sweep starts no attempt (ending a run was an operator's decision), so no retry under the key. */
export function sweptOrphanFacts(input: {
  dispatched: boolean;
  policy: UnknownOutcomePolicy;
  answer?: VerificationAnswer;
}): AnsweredFacts {
  return {
    dispatched: input.dispatched,
    policy: input.policy,
    ...NO_RETRY_UNDER_KEY,
    anotherAttemptFollows: false,
    providerError: NO_PROVIDER_ERROR,
    ...(input.answer === undefined ? {} : { verification: { answer: input.answer } }),
  };
}
