import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { timeBeforeFenceMs } from '../config/sendTimeBudget';
import { readMailLog } from '../db/orderMailLog';
import { loadOrderForMail, type OrderForMail } from '../db/orders';
import { describeDatabaseError } from '../db/pool';
import { renderConfirmationMail, type MailIdentity } from '../mail/confirmationMail';
import { defaultMailTemplates, MailRenderError, type MailTemplates } from '../mail/template/mailTemplates';
import { DEFAULT_MAIL_SIZE_LIMITS, renderedBytes, type MailSizeLimits } from '../mail/mailSizeLimits';
import { recipientAddressProblem } from '../mail/recipientAddress';
import type { OutgoingMail } from '../mail/types';
import { noOrderMailMetrics } from '../metrics/orderMailMetrics';
import {
  claimLostFailure,
  mailRefusedFailure,
  notAcceptedOutcome,
  orderNotFoundFailure,
  SEND_HELD,
  sendFailure,
  type SendAccepted,
  type SendClaimLost,
} from '../shared/sendOutcome';
import { mailTransportsOf, type ActivityDependencies } from './dependencies';
import { markDispatched, readAttemptProvider } from './dispatchFence';
import { countSendAgainstProvider } from './providerHealthCount';

/** Kept for the fence statement itself out of the time before the fence deadline. */
const FENCE_STATEMENT_RESERVE_MS = 500;

export interface SendOrderMailInput {
  orderId: string;
  claimToken: string;
  attempt: number;
  /** From the claim: what a provider that dedupes by key gets (src/mail/idempotencyKey.ts). */
  idempotencyKey: string;
}

/**
 * Sends the order's confirmation mail at most once per claim attempt. Never retried by Temporal
 * (maximumAttempts: 1) and never a local activity. Everything before the dispatch fence is known not to have
 * reached the Mail API; the fence guarantees that only one execution of this attempt makes the request.
 * Its outcome is one shape (SendOutcome, src/shared/sendOutcome.ts): returned when accepted, else thrown as
 * the details of a typed ApplicationFailure, so the Web UI shows the send failed and why.
 */
export function createSendOrderMail(deps: ActivityDependencies) {
  return async function sendOrderMail(input: SendOrderMailInput): Promise<SendAccepted> {
    const { orderId } = input;
    const metrics = deps.metrics ?? noOrderMailMetrics;
    // Temporal's own timeout for this execution (the workflow's setting, as history recorded it), measured
    // from here: the request is made only if the transport's whole deadline still fits before it.
    const startedAt = performance.now();
    const sendTimeoutMs = activityInfo().startToCloseTimeoutMs;
    const transports = mailTransportsOf(deps);
    const deadlineAfterFenceMs = Math.max(...transports.map((transport) => transport.deadlineAfterFenceMs));
    const budgetMs = timeBeforeFenceMs(sendTimeoutMs, deadlineAfterFenceMs);
    const passFenceBy = startedAt + budgetMs;
    const tooLate = () =>
      Object.assign(
        new Error(
          `it did not finish within the ${budgetMs} ms that the send's ${sendTimeoutMs} ms timeout leaves before the ` +
            `dispatch fence (the transport's deadline after it is ${deadlineAfterFenceMs} ms)`,
        ),
        { code: 'FENCE_DEADLINE' },
      );
    const beforeFence = <T>(step: string, work: () => Promise<T>) =>
      beforeDispatch(step, () => withinDeadline(passFenceBy, tooLate, work));

    // The provider the claim chose for this attempt (failover): the request goes through it and nowhere else.
    const provider = await beforeFence('read the attempt’s provider', () =>
      readAttemptProvider(deps.db, input),
    );
    const mailTransport =
      provider === null
        ? deps.mail
        : transports.find((transport) => transport.destination?.provider === provider);
    if (mailTransport === undefined) {
      throw sendFailure(
        notAcceptedOutcome({
          outcome: 'not_sent',
          httpStatus: null,
          errorCode: 'PROVIDER_NOT_CONFIGURED',
          reason:
            `the claim chose provider ${provider} for this attempt, and this worker is not configured for it ` +
            '(MAIL_PROVIDERS); nothing was sent',
          retryAfterMs: null,
        }),
      );
    }

    const limits = deps.mailLimits ?? DEFAULT_MAIL_SIZE_LIMITS;
    // One more than the limit, so an order over it is known to be over without reading all of it.
    const order = await beforeFence('load the order', () =>
      loadOrderForMail(deps.db, orderId, limits.maxOrderItems + 1),
    );
    if (order === null) throw orderNotFoundFailure(orderId);
    const templates = deps.mailTemplates ?? defaultMailTemplates();
    const mail = await beforeFence('render the mail', async () => ({
      ...renderMailWithinLimits(
        order,
        (provider === null ? undefined : deps.providerMailIdentity?.get(provider)) ?? deps.mailIdentity,
        limits,
        templates,
      ),
      idempotencyKey: input.idempotencyKey,
    }));

    // The transport calls this once it holds a connection, and makes its request only if it returns.
    let dispatchedAt: number | null = null;
    // When this execution asked for the fence: Postgres's dispatched_at is not earlier, so the request's end,
    // measured from here, bounds how long after dispatched_at the request lasted.
    let fenceCalledAt: number | null = null;
    const passFence = async (): Promise<void> => {
      const fence = await beforeFence('set the dispatch fence', async () => {
        fenceCalledAt = performance.now();
        const answer = await markDispatched(deps.db, {
          orderId,
          claimToken: input.claimToken,
          attempt: input.attempt,
          // Where the request goes and what it carries, for whoever asks the provider about it later.
          provider,
          dispatch: {
            destination: mailTransport.destination ?? null,
            sendKey: input.idempotencyKey,
            template: { name: templates.name, sha256: templates.sha256 },
            sendTimeoutMs,
          },
        });
        // The fence held, but too late for the whole transport deadline to fit: no request after all.
        if (answer === 'dispatched' && performance.now() > passFenceBy) throw tooLate();
        return answer;
      });
      if (fence === 'claim-lost') {
        log.warn('Claim no longer held by this attempt; no request made', {
          orderId,
          attempt: input.attempt,
        });
        metrics.claimConflict('claim-lost');
        throw claimLostFailure(orderId, await describeLostClaim(deps, orderId));
      }
      if (fence === 'held') {
        log.info('Sends are held by an operator; no request made', {
          orderId,
          attempt: input.attempt,
          provider,
        });
        throw sendFailure(
          notAcceptedOutcome({
            outcome: 'not_sent',
            httpStatus: null,
            errorCode: SEND_HELD,
            reason:
              `an operator holds sends${provider === null ? '' : ` through ${provider}`} (npm run ops -- hold): no ` +
              'request was made, and the run waits for the hold to be lifted',
            retryAfterMs: null,
          }),
        );
      }
      if (fence === 'already-dispatched') {
        // This attempt's send ran before (an activity reset, a second worker): its request may have been
        // accepted, so this execution must not make another one. The outcome is unknown.
        log.warn('Attempt already dispatched; no second request made', { orderId, attempt: input.attempt });
        metrics.claimConflict('already-dispatched');
        throw sendFailure(
          notAcceptedOutcome({
            outcome: 'unknown',
            httpStatus: null,
            errorCode: 'ALREADY_DISPATCHED',
            reason:
              'this attempt had already dispatched its request before; outcome unknown, no second request made',
          }),
        );
      }
      dispatchedAt = performance.now();
    };

    // The call is not tied to the activity's cancellation: a dispatched request is never aborted by a worker
    // shutdown, so its outcome can still be recorded truthfully.
    // The transport stops waiting for a connection a little before the deadline, to leave the fence its time.
    const result = await mailTransport.send(mail, {
      passFenceBy: passFenceBy - FENCE_STATEMENT_RESERVE_MS,
      passFence,
    });
    const durationSeconds = (performance.now() - (dispatchedAt ?? startedAt)) / 1000;
    metrics.sendFinished(result.outcome, durationSeconds, provider ?? undefined);
    // Not awaited: the result is this activity's to report now, and a count that waits for the health row's
    // lock must never push a send past its timeout (the count is best effort and catches its own errors).
    if (provider !== null && dispatchedAt !== null) {
      void countSendAgainstProvider(deps, { orderId, provider, result });
    }
    log.info('Order mail send finished', {
      orderId,
      attempt: input.attempt,
      outcome: result.outcome,
      httpStatus: result.httpStatus,
      dispatched: dispatchedAt !== null,
      provider,
    });
    if (result.outcome === 'accepted') return result;
    throw sendFailure(
      notAcceptedOutcome(
        result,
        dispatchedAt === null || fenceCalledAt === null ? null : Math.ceil(performance.now() - fenceCalledAt),
      ),
    );
  };
}

/**
 * Runs a step before the fence, but never past the fence deadline: a step still running then is left behind
 * (its result is ignored) and the send ends as "not sent", while Temporal still waits for its answer. A
 * fence statement left behind that commits later is harmless: this attempt makes no request, and the record
 * says so.
 */
async function withinDeadline<T>(
  passFenceBy: number,
  tooLate: () => Error,
  work: () => Promise<T>,
): Promise<T> {
  const leftMs = passFenceBy - performance.now();
  if (leftMs <= 0) throw tooLate();
  const running = work();
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(tooLate()), leftMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    running.catch(() => undefined);
  }
}

/**
 * The mail, or a permanent refusal when the order cannot be mailed as it is: more items than the limit (found
 * before rendering), a recipient that is not exactly one plain address, a value the template cannot render
 * (a link that is not https), or a rendered mail over the byte limit. Each is checked before the dispatch
 * fence, so the row proves nothing was sent.
 */
function renderMailWithinLimits(
  order: OrderForMail,
  identity: MailIdentity,
  limits: MailSizeLimits,
  templates: MailTemplates,
): OutgoingMail {
  const { orderId } = order;
  if (order.items.length > limits.maxOrderItems) {
    throw mailRefusedFailure(
      orderId,
      'ORDER_TOO_LARGE',
      `the order has more than ${limits.maxOrderItems} items (MAIL_MAX_ORDER_ITEMS), too many for one mail`,
    );
  }
  const problem = recipientAddressProblem(order.customerEmail);
  if (problem !== null) {
    throw mailRefusedFailure(
      orderId,
      'INVALID_RECIPIENT',
      `the order's recipient address (orders.customer_email) ${problem}; it must be exactly one plain address like name@example.com`,
    );
  }
  let mail: OutgoingMail;
  try {
    mail = renderConfirmationMail(order, identity, templates);
  } catch (error) {
    if (!(error instanceof MailRenderError)) throw error;
    throw mailRefusedFailure(
      orderId,
      error.code,
      `the template ${templates.name} cannot render this order: ${error.message}`,
    );
  }
  const bytes = renderedBytes(mail);
  if (bytes > limits.maxRenderedBytes) {
    throw mailRefusedFailure(
      orderId,
      'ORDER_TOO_LARGE',
      `the rendered mail is ${bytes} bytes, over the ${limits.maxRenderedBytes} bytes of MAIL_MAX_RENDERED_BYTES`,
    );
  }
  return mail;
}

/**
 * Runs a step that happens before any byte goes to the Mail API. Should it fail (Postgres unreachable, say),
 * the mail was definitely not sent, and the workflow may retry after a backoff.
 */
async function beforeDispatch<T>(step: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // A refusal made on the way (an order that cannot be mailed) is already the failure to throw.
    if (error instanceof ApplicationFailure) throw error;
    throw sendFailure(
      notAcceptedOutcome({
        outcome: 'not_sent',
        httpStatus: null,
        errorCode: (error as { code?: string }).code ?? null,
        reason: `could not ${step} before sending: ${describeDatabaseError(error)}`,
        retryAfterMs: null,
      }),
    );
  }
}

/** The row as an operator (or another run) left it, for the workflow to show; best effort, nothing depends on it. */
async function describeLostClaim(deps: ActivityDependencies, orderId: string): Promise<SendClaimLost['row']> {
  try {
    const row = await readMailLog(deps.db, orderId);
    return { currentState: row?.state ?? null, currentOutcome: row?.outcome ?? null };
  } catch {
    return { currentState: null, currentOutcome: null };
  }
}
