// THE FACTS AN UNKNOWN OUTCOME IS DECIDED FROM, one builder per situation (docs/design.md §5, "The decision";
// the words are §10's). decideUnknownOutcome (unknownOutcome.ts) is pure, and only as right as the facts it is
// given: so each situation's facts are built here, once, with why each field is what it is. The situations:
// - the run's own attempt, whose send came back unknown (the workflow: src/workflows/orderConfirmationMail.ts);
// - an orphan found by the claim: a closed run's dispatched attempt (src/db/orderMailClaim.ts);
// - that orphan once the provider was asked about it (src/db/closedRunAttempt.ts, settleVerifiedOrphan);
// - a deferred unknown: one left for a retry under the send key, found by the next claim (src/mailRow/decide.ts);
// - an orphan the sweep settles, with no run to follow it (src/workflows/reconcileOrderMails.ts).
// Pure: shared by the workflows and the claim.
import type { IdempotencyRetrySettings, OrderMailWorkflowSettings } from './workflowSettings';
import type { UnknownOutcomePolicy } from './mailOutcome';
import type { AnsweredFacts, UnknownOutcomeFacts, VerificationAnswer } from './unknownOutcome';

/** What the row says of the attempt (src/db/orderMailRecord.ts, readAttemptFacts). */
export interface AttemptOnRecord {
  dispatched: boolean;
  sinceKeyFirstDispatchMs: number | null;
}

/**
 * No retry under the send key can follow the decision, so the key's window is never asked about: with
 * `idempotency: null` decideUnknownOutcome reads none of the timing below. These are no times, only "no
 * retry under the key"; a zero stands for nothing measured.
 */
const NO_RETRY_UNDER_KEY = {
  idempotency: null,
  sinceKeyFirstDispatchMs: null,
  delayBeforeRetryMs: 0,
  sendTimeoutMs: 0,
} as const;

/**
 * Nobody but the run that sent it saw a provider's answer to that request: an orphan's or a deferred unknown's
 * error is not known to whoever decides (a deferred unknown's was weighed when it was left for the key: an
 * error proving the key already used is never left for a retry under it).
 */
const NO_PROVIDER_ERROR = null;

/**
 * The run's own attempt, whose send came back unknown. The row says whether it passed the dispatch fence and
 * how old its send key is; a retry under the key would leave after this run's backoff and last at most this
 * run's send timeout, and only if another attempt follows (attempts left, no cancel); the provider's error is
 * the send's own. Where the provider can be asked (settings.verification), `answer` is null until it was:
 * the decision is then "verify", and again with the answer once it came.
 */
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

/**
 * An orphan the claim found: a closed run's attempt that passed the dispatch fence and was never recorded. The
 * claiming run is the attempt that follows, sending at once if the decision lets it (no backoff, its own send
 * timeout); the key's window is that of the provider the orphan went to (a key dedupes only there). Where that
 * provider can be asked and this claimer's run will ask (`canVerify`), the decision may be "verify": the claim
 * then hands the orphan back to the run.
 */
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

/**
 * An orphan handed back by the claim, once the provider was asked about it. The claim hands one back only
 * when its decision was "verify", which decideUnknownOutcome gives only where no retry under the key applies;
 * the window only closes further while the run waits, so no retry under the key. The settling run claims again
 * afterwards (an attempt follows), and the answer decides, or (inconclusive) the policy.
 */
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

/**
 * A deferred unknown: an unknown left for a retry under the send key whose later attempts did not send it,
 * found by the next claim of the failed row. An earlier request under the key may have been accepted
 * (dispatched). The claiming run is the attempt that follows, sending at once, within its send timeout, under
 * the key's window of the provider the row is bound to. Not asked about: where the key's window still covers
 * the retry, the retry under the key decides; where not, the policy.
 */
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

/**
 * An orphan the sweep settles: a claim of a closed run (or of an outside writer) that nobody claimed since,
 * dispatched or not as the sweep read it. No attempt follows: the sweep starts none (ending a run was an
 * operator's decision), so no retry under the key either. `answer` is what the provider said where the sweep
 * asked; without it, or inconclusive, the policy decides.
 */
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
