// THE place that decides what a possibly-accepted request becomes (docs: the outcome table, "unknown").
// Pure: the workflow calls it for its own attempt, the claim for an attempt a closed run left dispatched,
// the reconciliation sweep for the same when no run will follow. The SQL only carries out what it returns.
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
}

export type UnknownOutcomeDecision =
  /** The row proves no request was made: definitely not sent. */
  | { kind: 'not-sent'; state: 'failed'; outcome: 'not_sent'; unknownPolicy: null }
  /** Retry under the same key: the provider answers a repeat from its store, so no second mail. */
  | { kind: 'retry-under-key'; state: 'failed'; outcome: 'unknown'; unknownPolicy: 'idempotent-retry' }
  /** The configured policy settles it, and the row names the policy. */
  | {
      kind: 'policy';
      state: 'sent' | 'failed';
      outcome: 'unknown';
      unknownPolicy: UnknownOutcomePolicy;
    };

export function decideUnknownOutcome(facts: UnknownOutcomeFacts): UnknownOutcomeDecision {
  if (!facts.dispatched)
    return { kind: 'not-sent', state: 'failed', outcome: 'not_sent', unknownPolicy: null };
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
  return {
    kind: 'policy',
    state: facts.policy === 'assume-sent' ? 'sent' : 'failed',
    outcome: 'unknown',
    unknownPolicy: facts.policy,
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
  facts: Pick<UnknownOutcomeFacts, 'sinceKeyFirstDispatchMs' | 'idempotency'>,
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
    case 'policy':
      return `outcome unknown, settled by policy ${decision.unknownPolicy satisfies UnknownSettlement}`;
  }
}

function seconds(ms: number | null): string {
  return ms === null ? '?' : String(Math.round(ms / 1000));
}
