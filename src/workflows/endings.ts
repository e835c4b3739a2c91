// Every ending but a plain result, in one place, so what an operator reads can be compared side by side.
import { ApplicationFailure, CancelledFailure, log, upsertMemo } from '@temporalio/workflow';
import { FailureType } from '../shared/failures';
import type { LogOutcome } from '../shared/mailOutcome';
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';
import { describeSendOutcome, type SendNotAccepted } from '../shared/sendOutcome';
import type { Ended, LeftByCancel, OrderMailResult } from './attemptStep';
import { showNoClaim } from './showOrderMailState';

export const EXPLANATION_MEMO = 'orderMailExplanation';

/** A cancel while waiting to claim again after a failed attempt: the row is already settled. */
export function cancelledWhileWaiting(orderId: string, when: string): CancelledFailure {
  return endCancelled(
    `Order ${orderId}: cancelled while waiting to claim again ${when}. Nothing is in flight: the log row ` +
      'is settled as failed, and a reset or npm run ops -- retry sends the mail.',
  );
}

/** A cancel while waiting for the order's row to become visible: no row exists. */
export function cancelledWhileOrderNotVisible(orderId: string): CancelledFailure {
  showNoClaim();
  return endCancelled(
    `Order ${orderId}: cancelled while waiting for the order to become visible. Nothing was claimed or sent ` +
      'and no log row exists; once the order exists, the reconciliation sweep starts its mail again.',
  );
}

/** A cancel while sends are held, waiting or as the attempt the fence refused ended: settled failed/not_sent. */
export function cancelledWhileHeld(orderId: string, attempt: number): CancelledFailure {
  return endCancelled(
    `Order ${orderId}: cancelled while sends were held (npm run ops -- hold): attempt ${attempt} made no ` +
      'request and is recorded as failed/not_sent. After the hold, a reset or npm run ops -- retry sends the mail.',
  );
}

/** The order's row did not become visible within the run's bound: the run fails OrderNotFound, visibly. */
export function orderNeverVisibleFailure(
  orderId: string,
  notFound: ApplicationFailure,
  waitedMs: number,
): ApplicationFailure {
  showNoClaim();
  return runFails(
    FailureType.OrderNotFound,
    `${notFound.message} Waited ${Math.round(waitedMs / 1000)} s for the order to become visible; nothing ` +
      'was claimed. Once the order exists, the reconciliation sweep starts its mail again.',
    { cause: notFound.cause },
  );
}

/** What a cancel that arrived during an attempt leaves behind, said on the way out. */
export function cancelledAfter(orderId: string, step: LeftByCancel): CancelledFailure {
  switch (step.kind) {
    case 'released':
      return endCancelled(
        `Order ${orderId}: cancelled while claiming. No request was made; attempt ${step.attempt} is recorded as ` +
          'failed/not_sent, and a reset or npm run ops -- retry sends the mail.',
      );
    case 'finished': {
      const { result } = step;
      const what =
        result.result === 'sent'
          ? `the mail had already been dispatched, was waited for and recorded as sent (outcome ${result.outcome}` +
            `${result.providerMessageId === null ? '' : `, message id ${result.providerMessageId}`})`
          : result.result === 'already-sent'
            ? 'the mail was already recorded as sent, and this run sent nothing'
            : 'the log row had been settled by someone else, and this run recorded nothing';
      return endCancelled(`Order ${orderId}: cancelled during attempt ${result.attempts}; ${what}.`);
    }
    case 'lost-while-held':
      return endCancelled(
        `Order ${orderId}: cancelled after attempt ${step.result.attempts}, which sent nothing, found the row held ` +
          'by an orphan (after a reset). The sweep settles that orphan; then a reset or ' +
          'npm run ops -- retry sends the mail.',
      );
    case 'orphan-settled':
      return endCancelled(
        `Order ${orderId}: cancelled while settling attempt ${step.attempt}, which a closed run had sent and ` +
          `never recorded (${step.settledAs ?? 'settled by someone else meanwhile'}). This run sent nothing; ` +
          'npm run ops -- status shows the row, and a reset or npm run ops -- retry sends the mail if it is owed.',
      );
    case 'orphan-left':
      return endCancelled(
        `Order ${orderId}: cancelled while waiting to ask the provider about attempt ${step.attempt}, which a ` +
          'closed run had sent and never recorded. This run sent nothing and left that attempt as it was: the ' +
          'reconciliation sweep asks the provider and settles it; npm run ops -- status shows the row.',
      );
    case 'order-not-visible':
      return cancelledWhileOrderNotVisible(orderId);
    case 'held-at-same-time':
      showNoClaim();
      return endCancelled(
        `Order ${orderId}: cancelled; the row is held by ${step.holder}, and this run sent nothing.`,
      );
    case 'held':
      return cancelledWhileHeld(orderId, step.attempt);
    case 'not-accepted':
      return endCancelled(
        `Order ${orderId}: cancelled during attempt ${step.attempt}, which was waited for and recorded as ` +
          `failed/${step.recordedOutcome} (${describeSendOutcome(step.sent)}). Nothing is in flight; a reset ` +
          'or npm run ops -- retry sends the mail.',
      );
  }
}

/** The SDK's cancellation carries no details, so the explanation goes to the memo (docs/design.md §6). */
export function endCancelled(explanation: string): CancelledFailure {
  upsertMemo({ [EXPLANATION_MEMO]: explanation });
  log.info('Order mail workflow cancelled', { explanation });
  return new CancelledFailure(explanation);
}

/** A failure the run ends with: Temporal never retries it. */
function runFails(
  type: string,
  message: string,
  more: { details?: unknown[]; cause?: Error | undefined } = {},
): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true, ...more });
}

/** The row was already sent when this run claimed it. */
export function alreadySent(orderId: string, outcome: LogOutcome, attempts: number): OrderMailResult {
  return {
    orderId,
    result: 'already-sent',
    outcome,
    attempts,
    providerMessageId: null,
    explanation:
      `Order ${orderId}: the confirmation mail is already recorded as sent (outcome ${outcome}, ` +
      `${attempts} attempt(s)), so this run sent nothing. A sent mail is final for automation: to ` +
      'send it again, an operator resolves it as failed first (npm run ops -- resolve), then retries.',
  };
}

export function claimLost(
  orderId: string,
  attempt: number,
  outcome: LogOutcome | null,
  providerMessageId: string | null,
): OrderMailResult {
  const accepted =
    providerMessageId === null
      ? ''
      : ` The provider had accepted this run's mail (message id ${providerMessageId}); that answer is kept in the ` +
        "attempt's audit row.";
  return {
    orderId,
    result: 'claim-lost',
    outcome,
    attempts: attempt,
    providerMessageId,
    explanation:
      `Order ${orderId}: the mail's log row was settled by someone else (an operator's resolve) while this run ` +
      `held it, so this run did not change it.${accepted} The log row, its attempts and its operator acts say what happened.`,
  };
}

export function validOrderIdOrFail(input: unknown): string {
  try {
    return parseOrderId(input);
  } catch (error) {
    if (error instanceof InvalidOrderIdError) {
      throw runFails(FailureType.InvalidOrderId, error.message);
    }
    throw error;
  }
}

export function permanentFailure(
  orderId: string,
  step: Extract<Ended, { kind: 'not-accepted' }>,
): ApplicationFailure {
  // The workflow fails with the send's own type (MailRejected, OrderNotFound), so the UI and callers see it
  // first, with the activity's failure as its cause.
  const { sent } = step;
  const what =
    sent.failureType === FailureType.MailRefused
      ? 'the confirmation mail was refused before sending'
      : step.recordedOutcome === 'rejected'
        ? 'the mail API rejected the confirmation mail'
        : 'the confirmation mail cannot be sent';
  return runFails(
    sent.failureType,
    `Order ${orderId}: ${what} (${describeSendOutcome(sent)}). Fix the cause, then reset this workflow to send again.`,
    { details: [sent], cause: step.cause },
  );
}

/** Another run of this workflow id holds the row at a time this run cannot tell apart from its own. */
export function heldAtSameTimeFailure(orderId: string, holder: string): ApplicationFailure {
  showNoClaim();
  return runFails(
    FailureType.ClaimHeldElsewhere,
    `Order ${orderId}: the mail's row was claimed by another run of this workflow (${holder}) at ` +
      'a time this run cannot tell apart from its own; this run sends nothing. If that run is closed, ' +
      'the reconciliation sweep settles its claim; then retry: npm run ops -- retry.',
  );
}

/** Another workflow holds the row: the mail is its to send. */
export function heldByAnotherWorkflowFailure(orderId: string, holder: string): ApplicationFailure {
  showNoClaim();
  return runFails(
    FailureType.ClaimHeldElsewhere,
    `Order ${orderId}: the mail is being sent by another workflow (${holder}); this run sends nothing.`,
  );
}

/** Orphans kept turning up: the row keeps changing under this run. */
export function orphansKeptComingFailure(orderId: string, settledInARow: number): ApplicationFailure {
  return runFails(
    FailureType.ClaimHeldElsewhere,
    `Order ${orderId}: ${settledInARow} orphans were settled in a row and the row was ` +
      'still not free to claim; this run sends nothing. See npm run ops -- status, then retry.',
  );
}

/** A contract broken by an activity fails the run visibly (docs/design.md §6, "Only ApplicationFailures"). */
export function unexpectedAnswerFailure(orderId: string, what: string): ApplicationFailure {
  return runFails(FailureType.UnexpectedActivityAnswer, `Order ${orderId}: ${what}; this run stops here.`);
}

/** This run used its attempts and the mail is still not sent. */
export function gaveUpFailure(
  orderId: string,
  runAttempts: number,
  sent: SendNotAccepted,
): ApplicationFailure {
  return runFails(
    FailureType.MailNotSentGaveUp,
    `Order ${orderId}: the confirmation mail was not sent after ${runAttempts} attempts of this run ` +
      `(last: ${describeSendOutcome(sent)}). Fix the cause, then reset this workflow to try again.`,
    { details: [sent] },
  );
}
