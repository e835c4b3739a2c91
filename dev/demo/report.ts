// The run report and its invariants (issue 4, DESIGN.md §3), computed from facts only: what the sandbox
// received, what order_mail_log and order_mail_attempts say, and the workflows' statuses in Temporal.
// Pure, so the invariants themselves are unit-tested (test/demo/report.test.ts).
import type { MailOutcome, UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import type { InboxFacts } from './inbox';

export interface LogRowFact {
  orderId: string;
  state: 'sending' | 'sent' | 'failed';
  outcome: MailOutcome | null;
  attempts: number;
  providerMessageId: string | null;
}

export interface AttemptFact {
  orderId: string;
  attempt: number;
  state: 'sent' | 'failed';
  outcome: MailOutcome;
  unknownPolicy: UnknownOutcomePolicy | null;
  dispatched: boolean;
}

export interface MessageFact {
  orderId: string;
  id: string;
}

/** How the sandbox ended one request to its mail API, and the fault it applied (null for none). */
export interface RequestFact {
  orderId: string | null;
  fault: string | null;
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
}

export interface InvariantResult {
  name: string;
  description: string;
  holds: boolean;
  /** Orders that break it (the first few). */
  violations: string[];
  violationCount: number;
}

export interface RunReport {
  profile: string;
  transport: string;
  policy: UnknownOutcomePolicy;
  orders: number;
  workers: number;
  /** Messages received per order → number of orders. */
  messagesPerOrder: Record<string, number>;
  duplicates: { orders: number; extraMessages: number; examples: string[] };
  missing: {
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
  invariants: InvariantResult[];
  ok: boolean;
}

const EXAMPLES = 10;

interface OrderView {
  orderId: string;
  row: LogRowFact | undefined;
  attempts: AttemptFact[];
  messageIds: string[];
  unknownAttempts: number;
  workflowStatus: string | undefined;
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

  const invariants = checkInvariants(facts.policy, orders);
  if (facts.inbox !== null) invariants.push(inboxInvariant(facts.inbox, orders));
  const elapsedSeconds = facts.elapsedMs / 1000;
  return {
    profile: facts.profile,
    transport: facts.transport,
    policy: facts.policy,
    orders: orders.length,
    workers: facts.workers,
    messagesPerOrder,
    duplicates: {
      orders: duplicated.length,
      extraMessages: duplicated.reduce((sum, order) => sum + order.messageIds.length - 1, 0),
      examples: duplicated.slice(0, EXAMPLES).map((order) => order.orderId),
    },
    missing: {
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
    invariants,
    ok: invariants.every((invariant) => invariant.holds),
  };
}

function viewOrders(facts: RunFacts): OrderView[] {
  const rows = new Map(facts.rows.map((row) => [row.orderId, row]));
  const attempts = groupBy(facts.attempts, (attempt) => attempt.orderId);
  const messages = groupBy(facts.messages, (message) => message.orderId);
  return facts.orderIds.map((orderId) => {
    const orderAttempts = attempts.get(orderId) ?? [];
    return {
      orderId,
      row: rows.get(orderId),
      attempts: orderAttempts,
      messageIds: (messages.get(orderId) ?? []).map((message) => message.id),
      // Only a dispatched attempt can explain a message: one that never passed the fence made no request.
      unknownAttempts: orderAttempts.filter((attempt) => attempt.outcome === 'unknown' && attempt.dispatched)
        .length,
      workflowStatus: facts.workflows[orderId],
    };
  });
}

/** Sent is final; failed is final once the workflow that may still retry it has closed. */
function isTerminal(order: OrderView): boolean {
  if (order.row === undefined) return false;
  if (order.row.state === 'sent') return true;
  return (
    order.row.state === 'failed' && order.workflowStatus !== undefined && order.workflowStatus !== 'RUNNING'
  );
}

function checkInvariants(policy: UnknownOutcomePolicy, orders: OrderView[]): InvariantResult[] {
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
      "every 'sent'/'accepted' row has exactly one message of its own (its provider message id); under " +
        'assume-failed, any further message must come from an attempt whose outcome was unknown',
      (order) =>
        order.row?.state === 'sent' &&
        order.row.outcome === 'accepted' &&
        (!order.messageIds.includes(order.row.providerMessageId ?? '') ||
          order.messageIds.length - 1 > explainable(policy, order)),
    ),
    invariant(
      'rejected-or-not-sent-row-has-no-message',
      "every row whose outcome is 'rejected' or 'not_sent' has no message (under assume-failed: none beyond " +
        'those of attempts whose outcome was unknown)',
      (order) =>
        (order.row?.outcome === 'rejected' || order.row?.outcome === 'not_sent') &&
        order.messageIds.length > explainable(policy, order),
    ),
    invariant(
      'no-message-without-an-attempt',
      'every message is accounted for by an accepted attempt or one whose outcome was unknown',
      (order) =>
        order.messageIds.length >
        order.attempts.filter((attempt) => attempt.outcome === 'accepted').length + order.unknownAttempts,
    ),
    invariant(
      'audit-matches-log',
      'every settled row has its attempt in order_mail_attempts, with the same state and outcome',
      (order) =>
        order.row !== undefined &&
        order.row.state !== 'sending' &&
        !order.attempts.some(
          (attempt) =>
            attempt.attempt === order.row!.attempts &&
            attempt.state === order.row!.state &&
            attempt.outcome === order.row!.outcome,
        ),
    ),
  ];
  if (policy === 'assume-sent') {
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
        'under assume-failed an order has a second message only if its log shows an unknown outcome for each extra one',
        (order) => order.messageIds.length > 1 && order.messageIds.length - 1 > order.unknownAttempts,
      ),
    );
  }
  return results;
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

/** Messages that an unknown attempt may explain: none under assume-sent, where an unknown ends the order. */
function explainable(policy: UnknownOutcomePolicy, order: OrderView): number {
  return policy === 'assume-failed' ? order.unknownAttempts : 0;
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
