// The run report and its invariants (issue 4, docs/design.md §3), computed from facts only: what the sandbox
// received, what order_mail_log and order_mail_attempts say, and the workflows' statuses in Temporal.
// Pure, so the invariants themselves are unit-tested (test/demo/report.test.ts).
import type { FailoverSection } from './failoverReport';
import type { AttemptFact, InvariantResult, LogRowFact, MessageFact, RequestFact } from './runFacts';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import { summarizeCustomers, type CustomerOutcomes } from './customerOutcomes';
import type { ClusterChaosCounts } from './clusterChaos';
import type { InboxFacts } from './inbox';
import type { TaskRedeliveries } from './taskRedeliveries';
import { buildLieSection, type LieSection, type LiesTold } from './lieReport';
import {
  buildWebhookLieSection,
  noRefusedWebhookWroteARow,
  type WebhookFacts,
  type WebhookLieSection,
} from './webhookLieReport';
import {
  actsBehind,
  buildOperatorSection,
  operatorInvariants,
  endedWithoutMailByOperator,
  resendsAskedFor,
  runClosedByOperator,
  stoppedBeforeClaim,
  type OperatorFacts,
  type OperatorSection,
} from './operatorReport';

export type { AttemptFact, InvariantResult, LogRowFact, MessageFact, RequestFact };

export interface VerificationActivity {
  provider: string | null;
  verifies: boolean;
  /** Lookups the sandbox answered, and how many of them it faulted on purpose. */
  lookups: number;
  lookupFaults: number;
  /** Webhook postings the sandbox made (duplicates and retries included), of which duplicates. */
  webhookPosts: number;
  webhookDuplicates: number;
  /** Under --lying-provider: the lies the sandbox's lookups told, by kind (dev/demo/lieReport.ts). */
  lies?: LiesTold;
}

export interface ChaosCounts {
  workerKills: number;
  workerRestarts: number;
  /** Workers that exited without being killed (started while Temporal or Postgres was down), restarted. */
  workerExits: number;
  postgresRestarts: number;
  temporalRestarts: number;
  refusedWindows: number;
}

/** A --cluster run: the acts on the cluster's hosts, the tasks the server redelivered, the shards at the end. */
export interface ClusterFacts {
  acts: ClusterChaosCounts;
  redeliveries: TaskRedeliveries;
  historyShards: number;
  /** History host → shards it owns once the run is over. */
  shardsAtEnd: Record<string, number>;
}

export interface StartCounts {
  clientProcesses: number;
  startCalls: number;
  started: number;
  alreadyStarted: number;
  retriedCalls: number;
}

export interface RunFacts {
  profile: string;
  /** How the workers sent: the HTTP Mail API or SMTP. */
  transport: string;
  policy: UnknownOutcomePolicy;
  /** The provider the sandbox played, whether the workers verified unknown outcomes with it, and how. */
  verification: VerificationActivity;
  orderIds: string[];
  rows: LogRowFact[];
  attempts: AttemptFact[];
  messages: MessageFact[];
  requests: RequestFact[];
  /** Workflow id → status name as Temporal lists it (COMPLETED, FAILED, RUNNING, …). */
  workflows: Record<string, string>;
  /** What the inbox (MailDev) holds, when the run had one. */
  inbox: InboxFacts | null;
  chaos: ChaosCounts;
  starts: StartCounts;
  workers: number;
  elapsedMs: number;
  /** What an operator did, in a run with operators (--operators); absent or null otherwise. */
  operators?: OperatorFacts | null;
  /** Under --lying-provider with a provider that posts webhooks: the webhook lies and the receiver's rows. */
  webhooks?: WebhookFacts | null;
  /** The cluster and what was done to it, in a --cluster run; absent or null otherwise. */
  cluster?: ClusterFacts | null;
}

export interface RunReport {
  /** Under --lying-provider: every lie told, by kind, and how its orders were settled; null otherwise. */
  lies: LieSection | null;
  /** Under --lying-provider with webhooks: every webhook lie, by kind, how it and its orders were settled. */
  webhookLies: WebhookLieSection | null;
  profile: string;
  transport: string;
  policy: UnknownOutcomePolicy;
  verification: RunFacts['verification'];
  orders: number;
  workers: number;
  /** What the customers got, and how each unknown outcome was settled (dev/demo/customerOutcomes.ts). */
  customers: CustomerOutcomes;
  /** Messages received per order → number of orders. */
  messagesPerOrder: Record<string, number>;
  duplicates: { orders: number; extraMessages: number; examples: string[] };
  /** Rows that do not match what happened: sent/accepted without its message, or never settled. */
  rowsAgainstFacts: {
    acceptedWithoutMessage: number;
    noTerminalRow: number;
    examples: string[];
  };
  /** 'state/outcome' → rows. */
  rows: Record<string, number>;
  unknownOutcomes: {
    attempts: number;
    /** 'policy → state' → attempts. */
    resolvedAs: Record<string, number>;
    /** Orders with an unknown attempt whose mail the provider did get. */
    ordersDelivered: number;
    /** Orders with an unknown attempt whose mail the provider never got. */
    ordersNotDelivered: number;
    /** Orders settled as sent by assume-sent although no message arrived: the price of that policy. */
    assumedSentButNotDelivered: number;
  };
  workflows: Record<string, number>;
  /** The inbox a person can open, and how many mails each order has there; null when the run had none. */
  inbox: {
    url: string;
    messages: number;
    /** Mails per order in the inbox → number of orders. */
    messagesPerOrder: Record<string, number>;
  } | null;
  faults: {
    /** Requests the sandbox faulted, by fault. */
    injected: Record<string, number>;
    requests: number;
  } & ChaosCounts;
  starts: StartCounts;
  elapsedSeconds: number;
  ordersPerSecond: number;
  /** The operator's acts and their counts (dev/demo/operatorReport.ts); null in a run without operators. */
  operators: OperatorSection | null;
  /** A --cluster run's acts on the cluster and the tasks redelivered; null on the dev server. */
  cluster: ClusterFacts | null;
  invariants: InvariantResult[];
  ok: boolean;
  /** --failover: per provider, the attempts that failed over and why (dev/demo/failoverReport.ts). */
  failover?: FailoverSection | null;
}

const EXAMPLES = 10;

interface OrderView {
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

export function buildReport(facts: RunFacts): RunReport {
  const orders = viewOrders(facts);
  const messagesPerOrder: Record<string, number> = {};
  for (const order of orders) increment(messagesPerOrder, String(order.messageIds.length));

  const duplicated = orders.filter((order) => order.messageIds.length > 1);
  const acceptedWithoutMessage = orders.filter(
    (order) =>
      order.row?.state === 'sent' &&
      order.row.outcome === 'accepted' &&
      !order.messageIds.includes(order.row.providerMessageId ?? ''),
  );
  const notTerminal = orders.filter((order) => !isTerminal(order));

  const rows: Record<string, number> = {};
  for (const row of facts.rows) increment(rows, `${row.state}/${row.outcome ?? '-'}`);
  const noRow = orders.filter((order) => order.row === undefined).length;
  if (noRow > 0) rows['(no row)'] = noRow;

  const unknownAttempts = facts.attempts.filter((attempt) => attempt.outcome === 'unknown');
  const resolvedAs: Record<string, number> = {};
  for (const attempt of unknownAttempts) {
    increment(resolvedAs, `${attempt.unknownPolicy ?? '?'} → ${attempt.state}`);
  }
  const withUnknown = orders.filter((order) => order.unknownAttempts > 0);
  const acceptedCount = (order: OrderView): number =>
    order.attempts.filter((attempt) => attempt.outcome === 'accepted').length;
  const delivered = withUnknown.filter((order) => order.messageIds.length > acceptedCount(order));

  const workflows: Record<string, number> = {};
  for (const order of orders) increment(workflows, order.workflowStatus ?? 'NOT FOUND');

  const injected: Record<string, number> = {};
  for (const request of facts.requests) if (request.fault !== null) increment(injected, request.fault);

  const operatorFacts = facts.operators ?? null;
  const behind = operatorFacts === null ? null : (broken: string[]) => actsBehind(operatorFacts.acts, broken);
  const customers = summarizeCustomers(facts);
  const invariants = checkInvariants(facts.policy, orders, behind);
  const closedByOperator =
    facts.operators == null ? new Set<string>() : runClosedByOperator(facts.operators.acts);
  if (facts.verification.verifies) {
    invariants.push(...verificationInvariants(customers, orders, closedByOperator));
  }
  if (facts.inbox !== null) invariants.push(inboxInvariant(facts.inbox, orders));
  if (facts.webhooks != null) invariants.push(noRefusedWebhookWroteARow(facts.webhooks));
  const operatorOrders = orders.map((order) => ({
    orderId: order.orderId,
    row: order.row,
    messages: order.messageIds.length,
  }));
  if (facts.operators != null) {
    for (const { name, description, broken } of operatorInvariants(facts.operators, operatorOrders)) {
      invariants.push({
        name,
        description,
        holds: broken.length === 0,
        violations: broken.slice(0, EXAMPLES),
        violationCount: broken.length,
        ...(broken.length > 0 ? { actsBehind: actsBehind(facts.operators.acts, broken) } : {}),
      });
    }
  }
  const elapsedSeconds = facts.elapsedMs / 1000;
  return {
    lies:
      facts.verification.lies === undefined ? null : buildLieSection(facts.verification.lies, facts.attempts),
    webhookLies: facts.webhooks == null ? null : buildWebhookLieSection(facts.webhooks, facts.attempts),
    profile: facts.profile,
    transport: facts.transport,
    policy: facts.policy,
    verification: facts.verification,
    orders: orders.length,
    workers: facts.workers,
    customers,
    messagesPerOrder,
    duplicates: {
      orders: duplicated.length,
      extraMessages: duplicated.reduce((sum, order) => sum + order.messageIds.length - 1, 0),
      examples: duplicated.slice(0, EXAMPLES).map((order) => order.orderId),
    },
    rowsAgainstFacts: {
      acceptedWithoutMessage: acceptedWithoutMessage.length,
      noTerminalRow: notTerminal.length,
      examples: [...acceptedWithoutMessage, ...notTerminal].slice(0, EXAMPLES).map((order) => order.orderId),
    },
    rows,
    unknownOutcomes: {
      attempts: unknownAttempts.length,
      resolvedAs,
      ordersDelivered: delivered.length,
      ordersNotDelivered: withUnknown.length - delivered.length,
      assumedSentButNotDelivered: orders.filter(
        (order) =>
          order.row?.state === 'sent' && order.row.outcome === 'unknown' && order.messageIds.length === 0,
      ).length,
    },
    workflows,
    inbox: facts.inbox === null ? null : summarizeInbox(facts.inbox, orders),
    faults: { injected, requests: facts.requests.length, ...facts.chaos },
    starts: facts.starts,
    elapsedSeconds: round(elapsedSeconds, 1),
    ordersPerSecond: elapsedSeconds > 0 ? round(orders.length / elapsedSeconds, 1) : 0,
    operators: facts.operators == null ? null : buildOperatorSection(facts.operators, operatorOrders),
    cluster: facts.cluster ?? null,
    invariants,
    ok: invariants.every((invariant) => invariant.holds),
  };
}

function viewOrders(facts: RunFacts): OrderView[] {
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

/**
 * Sent is final; failed is final once the workflow that may still retry it has closed. An order without a row
 * is terminal only when an operator stopped each of its runs before it claimed (and no mail went out).
 */
function isTerminal(order: OrderView): boolean {
  if (order.row === undefined) return order.stoppedByOperator;
  if (order.row.state === 'sent') return true;
  return (
    order.row.state === 'failed' && order.workflowStatus !== undefined && order.workflowStatus !== 'RUNNING'
  );
}

function checkInvariants(
  policy: UnknownOutcomePolicy,
  orders: OrderView[],
  /** Set in a run with operators: what they did to the orders that break an invariant. */
  behind: ((broken: string[]) => Record<string, number>) | null,
): InvariantResult[] {
  const withOperators = behind !== null;
  const invariant = (
    name: string,
    description: string,
    breaks: (order: OrderView) => boolean,
  ): InvariantResult => {
    const broken = orders.filter(breaks).map((order) => order.orderId);
    return {
      name,
      description,
      holds: broken.length === 0,
      violations: broken.slice(0, EXAMPLES),
      violationCount: broken.length,
      ...(behind !== null && broken.length > 0 ? { actsBehind: behind(broken) } : {}),
    };
  };
  const results = [
    invariant(
      'no-row-left-sending',
      "no order_mail_log row is left in 'sending'",
      (order) => order.row?.state === 'sending',
    ),
    invariant(
      'every-order-terminal',
      "every order ends with a terminal row: 'sent', or 'failed' with its workflow closed",
      (order) => !isTerminal(order),
    ),
    invariant(
      'accepted-row-has-its-message',
      "every 'sent'/'accepted' row has its own message (its provider message id), and every further message " +
        'comes from another attempt: an accepted one, or one whose outcome was unknown',
      (order) =>
        order.row?.state === 'sent' &&
        order.row.outcome === 'accepted' &&
        (!order.messageIds.includes(order.row.providerMessageId ?? '') || order.unexplained > 0),
    ),
    invariant(
      'accepted-attempt-has-its-message',
      'every attempt the audit trail records as accepted has its message at the provider (by message id)',
      (order) =>
        order.attempts.some(
          (attempt) =>
            attempt.outcome === 'accepted' &&
            typeof attempt.providerMessageId === 'string' &&
            !order.messageIds.includes(attempt.providerMessageId),
        ),
    ),
    invariant(
      'rejected-or-not-sent-row-has-no-message',
      "every row whose outcome is 'rejected' or 'not_sent' has no message of its own: none beyond those that " +
        'other attempts (accepted, or with an unknown outcome) account for',
      (order) =>
        (order.row?.outcome === 'rejected' || order.row?.outcome === 'not_sent') && order.unexplained > 0,
    ),
    invariant(
      'no-message-without-an-attempt',
      'every message is accounted for by an accepted attempt (its message id) or one whose outcome was unknown',
      (order) => order.unexplained > 0,
    ),
    invariant(
      'audit-matches-log',
      'every settled row has its attempt in order_mail_attempts, with the same state and outcome (a row an ' +
        'operator resolved has its act in order_mail_operator_acts instead)',
      (order) =>
        order.row !== undefined &&
        order.row.state !== 'sending' &&
        order.row.outcome !== 'resolved' &&
        !order.attempts.some(
          (attempt) =>
            attempt.attempt === order.row!.attempts &&
            attempt.state === order.row!.state &&
            attempt.outcome === order.row!.outcome,
        ),
    ),
  ];
  if (policy === 'assume-sent' && withOperators) {
    results.unshift(
      invariant(
        'no-unrequested-duplicates-under-assume-sent',
        'under assume-sent no order has more than one message, except one more for each re-send an operator ' +
          'asked for (resolve as failed, then retry)',
        (order) => order.messageIds.length > 1 + order.resendsAsked,
      ),
    );
  } else if (policy === 'assume-sent') {
    results.unshift(
      invariant(
        'no-duplicates-under-assume-sent',
        'under assume-sent no order has more than one message',
        (order) => order.messageIds.length > 1,
      ),
    );
  } else {
    results.unshift(
      invariant(
        'duplicates-only-after-unknown',
        'under assume-failed an order has a second message only if its log shows an unknown outcome for each ' +
          'extra one (or an operator asked for a re-send)',
        (order) =>
          order.messageIds.length > 1 &&
          order.messageIds.length - 1 > order.unknownAttempts + order.resendsAsked,
      ),
    );
  }
  return results;
}

/**
 * With a provider that can be asked, unknown outcomes are settled by what it says, so every customer gets
 * exactly one mail whatever the policy: none without (the policy's price is gone), and every settlement the
 * sandbox can judge was right. A duplicate is caught by the invariants above, which explain extra mails only
 * by unknowns the policy settled.
 */
function verificationInvariants(
  customers: CustomerOutcomes,
  orders: OrderView[],
  closedByOperator: Set<string>,
): InvariantResult[] {
  // An attempt of a run an operator closed mid-send that was settled by the policy without the provider being
  // asked (since v1.1.0 the run that takes it over and the sweep ask; what is left: a worker that cannot ask,
  // a 1.0.x worker during a rolling deploy). Only that excuses a settlement here, and only on such an order;
  // every customer without a mail still counts in the report's summary.
  const policyPriced = (orderId: string): boolean =>
    closedByOperator.has(orderId) &&
    orders
      .find((order) => order.orderId === orderId)
      ?.attempts.some((attempt) => attempt.outcome === 'unknown' && attempt.verification === null) === true;
  const missing = orders.filter(
    (order) => order.messageIds.length === 0 && !order.endedByOperator && !policyPriced(order.orderId),
  );
  // A policy settlement is the policy's price (docs/design.md §9) also where an operator cancelled, terminated
  // or resolved the order: a cancel during the settle delay leaves verification inconclusive, and the policy
  // decides.
  const endedByOperator = new Set(
    orders.filter((order) => order.endedByOperator).map((order) => order.orderId),
  );
  const wrong = customers.unknowns.wrongAttempts.filter(
    (attempt) =>
      !(attempt.settlement.startsWith('policy') && endedByOperator.has(attempt.orderId)) &&
      (attempt.verified || !policyPriced(attempt.orderId)),
  );
  return [
    {
      name: 'no-customer-without-a-mail',
      description:
        'with verification, every customer got a mail, whatever the row says (unless an operator cancelled, ' +
        'terminated or resolved the order, or closed a run mid-send so that the policy settled its attempt)',
      holds: missing.length === 0,
      violations: missing.slice(0, EXAMPLES).map((order) => order.orderId),
      violationCount: missing.length,
    },
    {
      name: 'unknowns-settled-right',
      description:
        'every unknown outcome was settled as the provider had it: verified (or assumed) sent only when it had ' +
        'the mail, not sent only when it had none (settlements by the policy are not judged where an operator ended the order or closed a run mid-send)',
      holds: wrong.length === 0,
      violations: [...new Set(wrong.map((attempt) => attempt.orderId))].slice(0, EXAMPLES),
      violationCount: wrong.length,
    },
  ];
}

/** The inbox is for people; this checks that what they see there is what the provider accepted, no more. */
function inboxInvariant(inbox: InboxFacts, orders: OrderView[]): InvariantResult {
  const known = new Set(orders.map((order) => order.orderId));
  const broken = orders
    .filter((order) => (inbox.messagesPerOrder[order.orderId] ?? 0) !== order.messageIds.length)
    .map((order) => order.orderId);
  const strangers = Object.keys(inbox.messagesPerOrder).filter((orderId) => !known.has(orderId));
  if (inbox.withoutOrderId > 0) strangers.push(`${inbox.withoutOrderId} without an order id`);
  const violations = inbox.unreadable === null ? [...broken, ...strangers] : [inbox.unreadable];
  return {
    name: 'inbox-matches-provider',
    description:
      'the inbox holds, for every order, exactly the messages the provider accepted, and nothing else',
    holds: violations.length === 0,
    violations: violations.slice(0, EXAMPLES),
    violationCount: violations.length,
  };
}

function summarizeInbox(inbox: InboxFacts, orders: OrderView[]): NonNullable<RunReport['inbox']> {
  const messagesPerOrder: Record<string, number> = {};
  for (const order of orders) increment(messagesPerOrder, String(inbox.messagesPerOrder[order.orderId] ?? 0));
  const messages = Object.values(inbox.messagesPerOrder).reduce((sum, count) => sum + count, 0);
  return { url: inbox.webUrl, messages: messages + inbox.withoutOrderId, messagesPerOrder };
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
