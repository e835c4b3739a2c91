// What the workflow does at each ending but a plain result: the memo, the failure's type, what the Web UI shows.
// What each ending says is src/shared/endingTexts.ts, typed by the same kinds.
import { ApplicationFailure, CancelledFailure, log, upsertMemo } from '@temporalio/workflow';
import {
  alreadySentText,
  CANCELLED_TEXT,
  claimLostText,
  FAILED_TEXT,
  type CancelledKind,
  type CancelledValues,
  type FailedKind,
  type FailedValues,
} from '../shared/endingTexts';
import { FailureType } from '../shared/failures';
import type { LogOutcome } from '../shared/mailOutcome';
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';
import type { OrderMailResult } from './attemptStep';
import { showNoClaim } from './showOrderMailState';

export const EXPLANATION_MEMO = 'orderMailExplanation';

/** Endings of a run that never held a claim, which shows none. */
const NO_CLAIM: ReadonlySet<CancelledKind | FailedKind> = new Set([
  'order-not-visible',
  'order-never-visible',
  'held-at-same-time',
  'held-by-another-workflow',
]);

/** The SDK's cancellation carries no details, so the explanation goes to the memo (docs/design.md §6). */
export function cancelled<K extends CancelledKind>(
  kind: K,
  orderId: string,
  values: CancelledValues[K],
): CancelledFailure {
  if (NO_CLAIM.has(kind)) showNoClaim();
  const explanation = CANCELLED_TEXT[kind](orderId, values);
  upsertMemo({ [EXPLANATION_MEMO]: explanation });
  log.info('Order mail workflow cancelled', { explanation });
  return new CancelledFailure(explanation);
}

/** The type each failed ending fails the run with, and what it carries. */
const FAILS: { [K in FailedKind]: (values: FailedValues[K]) => { type: string; details?: unknown[] } } = {
  'order-never-visible': () => ({ type: FailureType.OrderNotFound }),
  // The send's own type (MailRejected, OrderNotFound), so the UI and callers see it first.
  permanent: ({ sent }) => ({ type: sent.failureType, details: [sent] }),
  'gave-up': ({ sent }) => ({ type: FailureType.MailNotSentGaveUp, details: [sent] }),
  'held-at-same-time': () => ({ type: FailureType.ClaimHeldElsewhere }),
  'held-by-another-workflow': () => ({ type: FailureType.ClaimHeldElsewhere }),
  'orphans-kept-coming': () => ({ type: FailureType.ClaimHeldElsewhere }),
  // A contract broken by an activity fails the run visibly (docs/design.md §6, "Only ApplicationFailures").
  'unexpected-answer': () => ({ type: FailureType.UnexpectedActivityAnswer }),
};

/** A failure the run ends with: Temporal never retries it. */
export function failed<K extends FailedKind>(
  kind: K,
  orderId: string,
  values: FailedValues[K],
  cause?: Error,
): ApplicationFailure {
  if (NO_CLAIM.has(kind)) showNoClaim();
  const message = FAILED_TEXT[kind](orderId, values);
  return ApplicationFailure.create({ ...FAILS[kind](values), message, nonRetryable: true, cause });
}

export function validOrderIdOrFail(input: unknown): string {
  try {
    return parseOrderId(input);
  } catch (error) {
    if (!(error instanceof InvalidOrderIdError)) throw error;
    const type = FailureType.InvalidOrderId;
    throw ApplicationFailure.create({ type, message: error.message, nonRetryable: true });
  }
}

/** The row was already sent when this run claimed it. */
export function alreadySent(orderId: string, outcome: LogOutcome, attempts: number): OrderMailResult {
  const explanation = alreadySentText(orderId, outcome, attempts);
  return { orderId, result: 'already-sent', outcome, attempts, providerMessageId: null, explanation };
}

export function claimLost(
  orderId: string,
  attempt: number,
  outcome: LogOutcome | null,
  providerMessageId: string | null,
): OrderMailResult {
  const explanation = claimLostText(orderId, providerMessageId);
  return { orderId, result: 'claim-lost', outcome, attempts: attempt, providerMessageId, explanation };
}
