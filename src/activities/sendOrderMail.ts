import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { timeBeforeFenceMs } from '../config/sendTimeBudget';
import { readMailLog } from '../db/orderMailLog';
import { loadOrderForAttempt, type OrderForMail } from '../db/orders';
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
import { markDispatched } from './dispatchFence';
import { countSendAgainstProvider } from './providerHealthCount';

/** Kept for the fence statement itself out of the time before the fence deadline. */
const FENCE_STATEMENT_RESERVE_MS = 500;

export interface SendOrderMailInput {
  orderId: string;
  claimToken: string;
  attempt: number;
  /** From the claim: what a provider that dedupes by key gets (src/mail/sendKey.ts). */
  idempotencyKey: string;
}

/**
 * Sends the order's mail at most once per attempt (docs/design.md §4 rule 2); fails typed with a SendOutcome.
 */
export function createSendOrderMail(deps: ActivityDependencies) {
  return async function sendOrderMail(input: SendOrderMailInput): Promise<SendAccepted> {
    const { orderId } = input;
    const metrics = deps.metrics ?? noOrderMailMetrics;
    // Temporal's timeout for this execution, from here: the request is made only if the transport's deadline fits.
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

    const limits = deps.mailLimits ?? DEFAULT_MAIL_SIZE_LIMITS;
    // The provider the claim chose for this attempt (failover), through which the request goes and nowhere
    // else, and the order: one read. One more item than the limit, so an order over it is known to be over.
    const { provider, order } = await beforeFence('read the attempt’s provider and load the order', () =>
      loadOrderForAttempt(deps.db, input, limits.maxOrderItems + 1),
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

    if (order === null) throw orderNotFoundFailure(orderId);
    const templates = deps.mailTemplates ?? defaultMailTemplates();
    const mail = await beforeFence('render the mail', async () => ({
      ...renderMailWithinLimits(
        order,
        (provider === null ? undefined : deps.providerMailIdentity?.get(provider)) ?? deps.mailIdentity,
        limits,
        templates,
      ),
      sendKey: input.idempotencyKey,
    }));

    // The transport calls this once it holds a connection, and makes its request only if it returns.
    let dispatchedAt: number | null = null;
    // Postgres's dispatched_at is not earlier than this, so the request's end measured from here bounds it.
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
        // This attempt ran before (a reset, a second worker): it may have been accepted, so no new request: unknown.
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

    // Not tied to cancellation: a shutdown never aborts a dispatched request, so its outcome is still recorded.
    const result = await mailTransport.send(mail, {
      passFenceBy: passFenceBy - FENCE_STATEMENT_RESERVE_MS,
      passFence,
    });
    const durationSeconds = (performance.now() - (dispatchedAt ?? startedAt)) / 1000;
    metrics.sendFinished(result.outcome, durationSeconds, provider ?? undefined);
    // Not awaited: a count waiting on the health row's lock must never push a send past its timeout.
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

/** A step before the fence, cut off at the fence deadline: the send then ends "not sent", no request made. */
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

/** The mail, or a permanent refusal before the fence (docs/design.md §5). */
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

/** A step before any byte goes out: its failure means definitely not sent, so the workflow may retry. */
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

/** The row as an operator or another run left it, to show; best effort. */
async function describeLostClaim(deps: ActivityDependencies, orderId: string): Promise<SendClaimLost['row']> {
  try {
    const row = await readMailLog(deps.db, orderId);
    return { currentState: row?.state ?? null, currentOutcome: row?.outcome ?? null };
  } catch {
    return { currentState: null, currentOutcome: null };
  }
}
