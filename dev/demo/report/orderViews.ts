// The run's facts joined per order: its row, its attempts, the messages the provider received for it, its
// workflow's status, and what an operator did to it. Both the report's counts (report.ts) and the invariants'
// judgement (invariants.ts) read the orders through this one view. Pure.
import type { AttemptFact, LogRowFact, RunFacts } from './facts';
import { groupBy } from './customerOutcomes';
import { endedWithoutMailByOperator, resendsAskedFor, stoppedBeforeClaim } from './operatorReport';

export interface OrderView {
  orderId: string;
  row: LogRowFact | undefined;
  attempts: AttemptFact[];
  messageIds: string[];
  unknownAttempts: number;
  /** Messages that none of the order's attempts accounts for (see unexplainedMessages). */
  unexplained: number;
  workflowStatus: string | undefined;
  /** Extra messages an operator deliberately asked for (resolve as failed, then retry). */
  resendsAsked: number;
  /** No row and no mail because an operator stopped every run before it claimed. */
  stoppedByOperator: boolean;
  /** An operator cancelled, terminated or resolved this order: a missing mail may be the operator's doing. */
  endedByOperator: boolean;
}

export function viewOrders(facts: RunFacts): OrderView[] {
  const rows = new Map(facts.rows.map((row) => [row.orderId, row]));
  const attempts = groupBy(facts.attempts, (attempt) => attempt.orderId);
  const messages = groupBy(facts.messages, (message) => message.orderId);
  const resends =
    facts.operators == null
      ? new Map<string, number>()
      : resendsAskedFor(facts.operators.acts, facts.operators.runs);
  const stopped =
    facts.operators == null
      ? new Set<string>()
      : stoppedBeforeClaim(
          facts.operators,
          facts.orderIds.map((orderId) => ({
            orderId,
            row: rows.get(orderId),
            messages: messages.get(orderId)?.length ?? 0,
          })),
        );
  const ended =
    facts.operators == null ? new Set<string>() : endedWithoutMailByOperator(facts.operators.acts);
  return facts.orderIds.map((orderId) => {
    const orderAttempts = attempts.get(orderId) ?? [];
    const row = rows.get(orderId);
    const messageIds = (messages.get(orderId) ?? []).map((message) => message.id);
    // Only a dispatched attempt can explain a message: one that never passed the fence made no request.
    const unknownAttempts = orderAttempts.filter(
      (attempt) => attempt.outcome === 'unknown' && attempt.dispatched,
    ).length;
    return {
      orderId,
      row,
      attempts: orderAttempts,
      messageIds,
      unknownAttempts,
      unexplained: unexplainedMessages(row, orderAttempts, messageIds, unknownAttempts),
      workflowStatus: facts.workflows[orderId],
      resendsAsked: resends.get(orderId) ?? 0,
      stoppedByOperator: stopped.has(orderId),
      endedByOperator: ended.has(orderId),
    };
  });
}

/**
 * Sent is final; failed is final once the workflow that may still retry it has closed. An order without a row
 * is terminal only when an operator stopped each of its runs before it claimed (and no mail went out).
 */
export function isTerminal(order: OrderView): boolean {
  if (order.row === undefined) return order.stoppedByOperator;
  if (order.row.state === 'sent') return true;
  return (
    order.row.state === 'failed' && order.workflowStatus !== undefined && order.workflowStatus !== 'RUNNING'
  );
}

/**
 * How many of an order's messages no attempt accounts for. An accepted attempt accounts for its own message
 * (matched by the provider's message id when the log has it, else for one message), and a dispatched attempt
 * whose outcome was unknown for at most one more. What is left is a message the log calls not sent, rejected
 * or nothing at all: an untruthful record or a send nobody claimed.
 */
function unexplainedMessages(
  row: LogRowFact | undefined,
  attempts: AttemptFact[],
  messageIds: string[],
  unknownAttempts: number,
): number {
  const accepted = attempts.filter((attempt) => attempt.outcome === 'accepted');
  const knownIds = new Set(
    accepted.flatMap((attempt) => (attempt.providerMessageId ? [attempt.providerMessageId] : [])),
  );
  if (row?.state === 'sent' && row.outcome === 'accepted' && row.providerMessageId)
    knownIds.add(row.providerMessageId);
  // The row's own accepted attempt is matched by the row's id, whether or not its audit row names it.
  const rowAttempt =
    row?.state === 'sent' && row.outcome === 'accepted' && row.providerMessageId ? row.attempts : null;
  const withoutKnownId = accepted.filter(
    (attempt) => !attempt.providerMessageId && attempt.attempt !== rowAttempt,
  ).length;
  // A row still 'sending' after its fence has an attempt in flight, with no audit row yet: it may explain one.
  const inFlight = row?.state === 'sending' && row.dispatched === true ? 1 : 0;
  const others = messageIds.filter((id) => !knownIds.has(id)).length;
  return Math.max(0, others - withoutKnownId - unknownAttempts - inFlight);
}
