// `npm run ops -- status <orderId>`: everything an operator needs about one order's mail, from the log (the
// source of truth) and from Temporal (what the workflow is doing, what the Web UI shows).
import { describeOrderConfirmationMail } from '../client';
import {
  listObservedResets,
  listOperatorActs,
  type ObservedResetRow,
  type OperatorActRow,
} from '../db/operatorActs';
import { listAttempts, readMailLog, type AttemptRow, type MailLogRow } from '../db/orderMailLog';
import { orderExists } from '../db/orders';
import { parseOrderId } from '../shared/orderId';
import { ORDER_MAIL_SEARCH_ATTRIBUTES } from '../shared/orderMailSearchAttributes';
import { listProviderEvents, type ProviderEventRow } from '../webhooks/providerEvents';
import { OpsRefusal, type OpsContext } from './opsContext';
import { workflowUiUrl } from './workflowLinks';

export interface OrderMailWorkflowSummary {
  runId: string;
  /** RUNNING, COMPLETED, FAILED, TERMINATED, ... as Temporal names it. */
  status: string;
  startTime: Date;
  closeTime: Date | null;
  searchAttributes: Record<string, unknown>;
}

export interface OrderMailStatus {
  orderId: string;
  row: MailLogRow | null;
  attempts: AttemptRow[];
  acts: OperatorActRow[];
  /** Resets made outside the ops CLI (the Web UI), as a worker observed them in Temporal's history. */
  observedResets: ObservedResetRow[];
  /** What the provider reported by webhook (accepted, delivered, bounced, dropped, complained), oldest first. */
  providerEvents: ProviderEventRow[];
  /** null: never started, or closed longer ago than the namespace's retention. */
  workflow: OrderMailWorkflowSummary | null;
  uiUrl: string;
  /** What an operator would do next, in one sentence. */
  nextStep: string;
}

export async function readOrderMailStatus(ctx: OpsContext, orderIdInput: string): Promise<OrderMailStatus> {
  const orderId = parseOrderId(orderIdInput);
  const [exists, row, attempts, acts, observedResets, providerEvents, workflow] = await Promise.all([
    orderExists(ctx.db, orderId),
    readMailLog(ctx.db, orderId),
    listAttempts(ctx.db, orderId),
    listOperatorActs(ctx.db, orderId),
    listObservedResets(ctx.db, orderId),
    listProviderEvents(ctx.db, orderId),
    describeWorkflow(ctx, orderId),
  ]);
  // A run for an order not in orders (started before its commit, or for a mistaken id) is still shown.
  if (!exists && row === null && workflow === null) throw unknownOrder(orderId);
  return {
    orderId,
    row,
    attempts,
    acts,
    observedResets,
    providerEvents,
    workflow,
    uiUrl: workflowUiUrl(ctx.uiBaseUrl, ctx.namespace, orderId, workflow?.runId ?? null),
    nextStep:
      missingOrderStep(orderId, exists, workflow) ??
      undeliveredStep(orderId, row, providerEvents) ??
      unconfiguredProviderStep(orderId, row, ctx.configured ?? null) ??
      nextStepFor(orderId, row, workflow),
  };
}

export async function describeWorkflow(
  ctx: OpsContext,
  orderId: string,
): Promise<OrderMailWorkflowSummary | null> {
  const description = await describeOrderConfirmationMail(ctx.client, orderId);
  if (description === null) return null;
  const searchAttributes: Record<string, unknown> = {};
  for (const key of ORDER_MAIL_SEARCH_ATTRIBUTES) {
    const value: unknown = description.typedSearchAttributes.get(key);
    if (value !== undefined) searchAttributes[key.name] = value;
  }
  return {
    runId: description.runId,
    status: description.status.name,
    startTime: description.startTime,
    closeTime: description.closeTime ?? null,
    searchAttributes,
  };
}

export function unknownOrder(orderId: string): OpsRefusal {
  return new OpsRefusal('UNKNOWN_ORDER', `Order ${orderId} does not exist in orders; nothing to do.`);
}

function missingOrderStep(
  orderId: string,
  exists: boolean,
  workflow: OrderMailWorkflowSummary | null,
): string | null {
  if (exists) return null;
  const notInOrders = `Order ${orderId} is not in orders (or not visible to this login)`;
  if (workflow?.status === 'RUNNING')
    return `${notInOrders}: its run waits for it and mails within seconds of it appearing, or ends OrderNotFound after its bound.`;
  return `${notInOrders}: its run ended ${workflow?.status ?? ''} without claiming. For a real order, the reconciliation sweep starts its mail again once it is committed; a mistaken id needs nothing.`;
}

/**
 * A sent mail the provider could not deliver, by the send's latest event only: an earlier send's bounce says
 * nothing about a later re-send.
 */
function undeliveredStep(orderId: string, row: MailLogRow | null, events: ProviderEventRow[]): string | null {
  if (row?.state !== 'sent') return null;
  const latest = events.at(-1);
  if (latest === undefined || (latest.eventType !== 'bounced' && latest.eventType !== 'dropped')) return null;
  const why = latest.reason === null ? '' : ` (${latest.reason})`;
  return (
    `The provider took the mail but ${latest.eventType === 'bounced' ? 'the recipient bounced it' : 'dropped it'}` +
    `${why}: the customer has no mail. Fix the address or the suppression, then send again: ` +
    `npm run ops -- resolve ${orderId} --as failed --reason "…", then npm run ops -- retry ${orderId} --reason "…"`
  );
}

/**
 * An order whose attempt may have reached a provider the workers no longer list: their claim fails it at once
 * (ProviderNotConfigured), and a retry does the same until a worker has that provider again.
 */
function unconfiguredProviderStep(
  orderId: string,
  row: MailLogRow | null,
  configured: readonly string[] | null,
): string | null {
  if (row === null || row.provider === null || configured === null || configured.includes(row.provider)) {
    return null;
  }
  const mayHaveReached =
    (row.state === 'sending' && row.dispatchedAt !== null) ||
    (row.state === 'failed' && row.outcome !== 'not_sent');
  if (!mayHaveReached) return null;
  return (
    `Bound to ${row.provider}, which MAIL_PROVIDERS (${configured.join(', ')}) no longer lists: its attempt may ` +
    `have reached ${row.provider}, so no other provider may take it, and a worker without ${row.provider} fails ` +
    `it at once (ProviderNotConfigured). Put ${row.provider} back as draining (MAIL_PROVIDERS_DRAINING, ` +
    `docs/operating.md#draining-a-provider), then: npm run ops -- retry ${orderId} --reason "…"`
  );
}

function nextStepFor(
  orderId: string,
  row: MailLogRow | null,
  workflow: OrderMailWorkflowSummary | null,
): string {
  const running = workflow?.status === 'RUNNING';
  if (row === null) {
    if (running) return 'The workflow is running and has not claimed the mail yet; wait.';
    if (workflow === null)
      return `No workflow and no log row: the reconciliation schedule starts it after its grace period, or start it now with: npm run start-mail -- ${orderId}`;
    return `The workflow ended (${workflow.status}) without claiming the mail; see it in the Web UI, fix the cause, then: npm run ops -- retry ${orderId} --reason "…"`;
  }
  switch (row.state) {
    case 'sent':
      if (row.outcome === 'unknown')
        return `Sent with an unknown outcome (policy ${row.unknownPolicy}). Check with the mail provider, then settle it: npm run ops -- resolve ${orderId} --as sent|failed --reason "…"`;
      return 'Nothing to do: the mail is sent.';
    case 'failed':
      if (running) return 'The workflow will try again by itself after its backoff; nothing to do yet.';
      return `Fix the cause (${row.lastError ?? 'see the last error'}), then send again: npm run ops -- retry ${orderId} --reason "…" (or Reset in the Web UI)`;
    case 'sending':
      if (running)
        return 'A send is under way; it settles by itself (at the latest when the send times out).';
      return `The run holding the claim is closed: the reconciliation sweep settles the row (released if it never dispatched, by the policy if it did). Retry applies the same rules at once (never sends twice): npm run ops -- retry ${orderId} --reason "…"`;
  }
}
