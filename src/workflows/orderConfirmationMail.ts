import {
  ActivityFailure,
  type ActivityOptions,
  ApplicationFailure,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  sleep,
} from '@temporalio/workflow';
import type { OrderMailActivities } from '../activities';
import { FailureType, type SendFailureDetails } from '../shared/failures';
import type { LogOutcome, MailOutcome } from '../shared/mailOutcome';
import { InvalidOrderIdError, parseOrderId } from '../shared/orderId';
import { delayBeforeNextAttempt, type OrderMailWorkflowSettings } from '../shared/workflowSettings';
import {
  idempotentRetryConceivable,
  idempotentRetryNote,
  recordDecisionFor,
  verdictOfSendFailure,
  withinIdempotencyWindow,
  type SendVerdict,
} from './sendVerdict';
import { showOrderMailState, stateShownFor } from './showOrderMailState';

// Claim and record are idempotent (fenced by the claim token and attempt), so Temporal may retry them as
// long as it takes Postgres to answer. 30 s covers the pool's statement (10 s) and client (15 s) deadlines.
const BOOKKEEPING_OPTIONS = {
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    // Retrying cannot make a missing order appear.
    nonRetryableErrorTypes: [FailureType.OrderNotFound],
  },
} satisfies ActivityOptions;
const bookkeeping = proxyActivities<OrderMailActivities>(BOOKKEEPING_OPTIONS);
// Runs started since this patch claim and record as LOCAL activities: two fewer activity tasks and workflow
// tasks per order on the server (docs/benchmarks.md has the figures). Safe because a local activity
// that re-runs on a workflow-task retry is just a retried claim or record, both idempotent and fenced by the
// claim token (DESIGN.md §4 rules 1 and 4); the send stays a regular activity. Backoffs from 10 s on wait
// on a durable timer instead of holding the workflow task open during a long Postgres outage.
const localBookkeeping = proxyLocalActivities<OrderMailActivities>({
  ...BOOKKEEPING_OPTIONS,
  localRetryThreshold: '10 seconds',
});
const LOCAL_BOOKKEEPING_PATCH = 'local-bookkeeping';

export interface OrderMailResult {
  orderId: string;
  /** 'sent': this run settled the mail as sent. 'already-sent': an earlier run had. 'claim-lost': an
   * operator moved the row while this run held it, so it stopped without recording. */
  result: 'sent' | 'already-sent' | 'claim-lost';
  outcome: LogOutcome | null;
  attempts: number;
  providerMessageId: string | null;
  /** Why this run sent nothing, in words an operator reads in the Web UI's result panel. */
  explanation?: string;
}

/**
 * Sends order `orderId`'s confirmation mail exactly once. The workflow id is the order id.
 * claim (retried) → send (never retried) → branch here on the outcome → record (retried); a definitely
 * not-sent failure waits with a durable backoff and claims again, up to the configured number of attempts.
 * So does an unknown outcome from a provider that dedupes by idempotency key, while its window lasts: the
 * next attempt carries the same key, so it cannot make a second mail.
 */
export async function orderConfirmationMail(orderIdInput: string): Promise<OrderMailResult> {
  const orderId = validOrderIdOrFail(orderIdInput);
  // Runs recorded before the patch replay with regular bookkeeping activities.
  const books = patched(LOCAL_BOOKKEEPING_PATCH) ? localBookkeeping : bookkeeping;

  for (;;) {
    const claim = await claimOrFail(books, orderId);
    if (claim.kind === 'already-sent') {
      log.info('Order mail was already sent; this run sends nothing', { orderId, outcome: claim.outcome });
      showOrderMailState({
        state: stateShownFor('sent', claim.outcome),
        outcome: claim.outcome,
        attempts: claim.attempts,
      });
      return {
        orderId,
        result: 'already-sent',
        outcome: claim.outcome,
        attempts: claim.attempts,
        providerMessageId: null,
        explanation:
          `Order ${orderId}: the confirmation mail is already recorded as sent (outcome ${claim.outcome ?? 'unknown'}, ` +
          `${claim.attempts} attempt(s)), so this run sent nothing. A sent mail is final for automation: to send ` +
          'it again, an operator resolves it as failed first (npm run ops -- resolve), then resets.',
      };
    }
    if (claim.kind === 'held-elsewhere') {
      throw ApplicationFailure.create({
        type: FailureType.ClaimHeldElsewhere,
        message: `Order ${orderId}: the mail is being sent by another workflow (${claim.holder}); this run sends nothing.`,
        nonRetryable: true,
      });
    }

    const { attempt, claimToken, settings } = claim;
    showOrderMailState({ state: 'sending', outcome: null, attempts: attempt, httpStatus: null });
    // The send is NEVER retried by Temporal: a retry after an unknown outcome could send a second mail. Its
    // timeout comes from the worker's configuration, above the HTTP client's own overall deadline.
    const sender = proxyActivities<OrderMailActivities>({
      startToCloseTimeout: settings.sendTimeoutMs,
      retry: { maximumAttempts: 1 },
    });

    let verdict: SendVerdict;
    try {
      const accepted = await sender.sendOrderMail({ orderId, claimToken, attempt });
      verdict = {
        kind: 'accepted',
        httpStatus: accepted.httpStatus,
        providerMessageId: accepted.providerMessageId,
      };
    } catch (error) {
      verdict = verdictOfSendFailure(error);
    }
    if (verdict.kind === 'claim-lost') {
      const { currentState, currentOutcome } = verdict.row;
      if (currentState !== null && currentState !== 'sending') {
        showOrderMailState({ state: stateShownFor(currentState, currentOutcome), outcome: currentOutcome });
      }
      return claimLost(orderId, attempt, currentOutcome);
    }

    const base = { orderId, claimToken, attempt };
    const recorded =
      verdict.kind === 'accepted'
        ? await books.recordOrderMailOutcome({
            ...base,
            state: 'sent',
            outcome: 'accepted',
            unknownPolicy: null,
            providerMessageId: verdict.providerMessageId,
            httpStatus: verdict.httpStatus,
            error: null,
          })
        : await recordNotAccepted(books, base, verdict.details, settings);

    if (recorded.kind === 'claim-lost') {
      if (recorded.currentState !== null && recorded.currentState !== 'sending') {
        showOrderMailState({ state: recorded.currentState });
      }
      return claimLost(orderId, attempt, null);
    }
    showOrderMailState({
      state: stateShownFor(recorded.state, recorded.outcome),
      outcome: recorded.outcome,
      httpStatus: verdict.kind === 'accepted' ? verdict.httpStatus : verdict.details.httpStatus,
    });
    if (recorded.state === 'sent') {
      const providerMessageId = verdict.kind === 'accepted' ? verdict.providerMessageId : null;
      return { orderId, result: 'sent', outcome: recorded.outcome, attempts: attempt, providerMessageId };
    }

    // Recorded as failed. verdict is not-accepted here: an accepted send is always recorded as sent.
    if (verdict.kind !== 'not-accepted')
      throw new Error('unreachable: an accepted send was recorded as failed');
    const { details } = verdict;
    if (recorded.outcome === 'rejected' || !details.retryable) {
      throw permanentFailure(orderId, recorded.outcome, verdict);
    }
    if (attempt >= settings.maxSendAttempts) {
      throw ApplicationFailure.create({
        type: FailureType.MailNotSentGaveUp,
        message:
          `Order ${orderId}: the confirmation mail was not sent after ${attempt} attempts ` +
          `(last: ${describeDetails(details)}). Fix the cause, then reset this workflow to try again.`,
        nonRetryable: true,
        details: [details],
      });
    }
    const delayMs = delayBeforeNextAttempt(settings, attempt, details.retryAfterMs);
    log.info('Order mail not accepted; waiting before the next attempt', {
      orderId,
      attempt,
      delayMs,
      outcome: recorded.outcome,
    });
    await sleep(delayMs);
  }
}

/**
 * Records a send that was not accepted. An unknown outcome is settled by the policy, except when the provider
 * dedupes by idempotency key and a retry would still fall inside its window: then it is recorded as failed,
 * retried under the same key, and the loop sends again (the provider answers from its store, no second mail).
 */
async function recordNotAccepted(
  books: typeof bookkeeping,
  base: { orderId: string; claimToken: string; attempt: number },
  details: SendFailureDetails,
  settings: OrderMailWorkflowSettings,
) {
  let error = details.reason;
  let retryUnderKey = false;
  const { idempotency } = settings;
  if (idempotentRetryConceivable(details, idempotency, base.attempt, settings.maxSendAttempts)) {
    // The time comes from Postgres through an activity: the workflow itself reads no clock.
    const { sinceFirstDispatchMs } = await books.readTimeSinceFirstDispatch({ orderId: base.orderId });
    retryUnderKey = withinIdempotencyWindow({
      idempotency,
      sinceFirstDispatchMs,
      delayMs: delayBeforeNextAttempt(settings, base.attempt, details.retryAfterMs),
      sendTimeoutMs: settings.sendTimeoutMs,
    });
    if (retryUnderKey)
      error = idempotentRetryNote(details.reason, sinceFirstDispatchMs!, idempotency.windowMs);
  }
  return books.recordOrderMailOutcome({
    ...base,
    ...recordDecisionFor(details, settings.unknownOutcomePolicy, retryUnderKey),
    providerMessageId: null,
    httpStatus: details.httpStatus,
    error,
  });
}

function claimLost(orderId: string, attempt: number, outcome: LogOutcome | null): OrderMailResult {
  return {
    orderId,
    result: 'claim-lost',
    outcome,
    attempts: attempt,
    providerMessageId: null,
    explanation:
      `Order ${orderId}: the mail's log row was settled by someone else (an operator's resolve) while this run ` +
      'held it, so this run stopped without recording anything. The log row and its operator acts say what happened.',
  };
}

/** The claim, with a missing order turned into the workflow's own OrderNotFound failure. */
async function claimOrFail(books: typeof bookkeeping, orderId: string) {
  try {
    return await books.claimOrderMail({ orderId });
  } catch (error) {
    if (
      error instanceof ActivityFailure &&
      error.cause instanceof ApplicationFailure &&
      error.cause.type === FailureType.OrderNotFound
    ) {
      throw ApplicationFailure.create({
        type: FailureType.OrderNotFound,
        message: error.cause.message,
        nonRetryable: true,
        cause: error,
      });
    }
    throw error;
  }
}

function validOrderIdOrFail(input: unknown): string {
  try {
    return parseOrderId(input);
  } catch (error) {
    if (error instanceof InvalidOrderIdError) {
      throw ApplicationFailure.create({
        type: FailureType.InvalidOrderId,
        message: error.message,
        nonRetryable: true,
      });
    }
    throw error;
  }
}

function permanentFailure(
  orderId: string,
  outcome: MailOutcome,
  verdict: Extract<SendVerdict, { kind: 'not-accepted' }>,
): ApplicationFailure {
  // The workflow fails with the send's own type (MailRejected, OrderNotFound), so the UI and callers see it
  // first, with the activity's failure as its cause.
  const what =
    verdict.failureType === FailureType.MailRefused
      ? 'the confirmation mail was refused before sending'
      : outcome === 'rejected'
        ? 'the mail API rejected the confirmation mail'
        : 'the confirmation mail cannot be sent';
  return ApplicationFailure.create({
    type: verdict.failureType,
    message: `Order ${orderId}: ${what} (${describeDetails(verdict.details)}). Fix the cause, then reset this workflow to send again.`,
    nonRetryable: true,
    details: [verdict.details],
    cause: verdict.cause,
  });
}

function describeDetails(details: SendFailureDetails): string {
  // Reasons from an HTTP answer already start with "HTTP <status>"; others name their status if they have one.
  const hasStatus = details.httpStatus === null || details.reason.startsWith(`HTTP ${details.httpStatus}`);
  return hasStatus ? details.reason : `HTTP ${details.httpStatus}: ${details.reason}`;
}
