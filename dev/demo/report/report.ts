// The run report: what a run's facts (facts.ts) add up to, per order (orderViews.ts) and per section (what the
// customers got, the operators' acts, the lies told, failover), with the invariants judged (invariants.ts) and
// whether they all hold. Pure: the runner gathers the facts (readFacts.ts), builds this, and prints it
// (formatReport.ts, reportFiles.ts). What it counts is unit-tested (test/demo/report.test.ts).
import type { UnknownOutcomePolicy } from '../../../src/shared/mailOutcome';
import { increment, summarizeCustomers, type CustomerOutcomes } from './customerOutcomes';
import { buildFailoverSection, type FailoverSection } from './failoverReport';
import { buildProviderChangeSection, type ProviderChangeSection } from './providerChangeReport';
import { buildSendOutageSection, type SendOutageSection } from '../sendOutage';
import type {
  ChaosCounts,
  ClusterFacts,
  InboxFacts,
  RunFacts,
  SendHoldFacts,
  UpgradeFacts,
  StartCounts,
  VerificationActivity,
} from './facts';
import { EXAMPLES, type InvariantResult } from './invariantResult';
import { allHold, judgeRun } from './invariants';
import { buildLieSection, type LieSection } from './lieReport';
import { buildOperatorSection, type OperatorSection } from './operatorReport';
import { isTerminal, viewOrders, type OrderView } from './orderViews';
import { buildWebhookLieSection, type WebhookLieSection } from './webhookLieReport';

export interface RunReport {
  /** Under --lying-provider: every lie told, by kind, and how its orders were settled; null otherwise. */
  lies: LieSection | null;
  /** Under --lying-provider with webhooks: every webhook lie, by kind, how it and its orders were settled. */
  webhookLies: WebhookLieSection | null;
  profile: string;
  transport: string;
  policy: UnknownOutcomePolicy;
  verification: VerificationActivity;
  orders: number;
  workers: number;
  /** What the customers got, and how each unknown outcome was settled (customerOutcomes.ts). */
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
  /** The operator's acts and their counts (operatorReport.ts); null in a run without operators. */
  operators: OperatorSection | null;
  /** A --cluster run's acts on the cluster and the tasks redelivered; null on the dev server. */
  cluster: ClusterFacts | null;
  invariants: InvariantResult[];
  ok: boolean;
  /** --failover: per provider, the attempts that failed over and why (failoverReport.ts). */
  failover?: FailoverSection | null;
  /** --hold-at: the hold, its timing, and what reached the provider while it held. */
  sendHold?: SendHoldFacts | null;
  upgrade?: UpgradeFacts | null;
  /** --send-outage: the witness probes, and how long after the outage each unknown was answered (sendOutage.ts). */
  sendOutage?: SendOutageSection | null;
  /** --provider-change: the drain, the key rotation, and the customers without a mail (providerChangeReport.ts). */
  providerChange?: ProviderChangeSection | null;
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

  const customers = summarizeCustomers(facts);
  const failover =
    facts.failover == null ? null : buildFailoverSection({ ...facts.failover, messages: facts.messages });
  const providerChange =
    facts.providerChange == null ? null : buildProviderChangeSection(facts.providerChange);
  const invariants = judgeRun(facts, { orders, customers, failover, providerChange });
  const elapsedSeconds = facts.elapsedMs / 1000;
  return {
    lies:
      facts.verification.lies === undefined ? null : buildLieSection(facts.verification.lies, facts.attempts),
    webhookLies:
      facts.webhooks == null ? null : buildWebhookLieSection(facts.webhooks, facts.attempts, facts.messages),
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
    operators:
      facts.operators == null
        ? null
        : buildOperatorSection(
            facts.operators,
            orders.map((order) => ({
              orderId: order.orderId,
              row: order.row,
              messages: order.messageIds.length,
            })),
          ),
    cluster: facts.cluster ?? null,
    invariants,
    ok: allHold(invariants),
    ...(failover === null ? {} : { failover }),
    ...(facts.sendHold == null ? {} : { sendHold: facts.sendHold }),
    ...(facts.upgrade == null ? {} : { upgrade: facts.upgrade }),
    ...(facts.sendOutage == null ? {} : { sendOutage: buildSendOutageSection(facts.sendOutage) }),
    ...(providerChange === null ? {} : { providerChange }),
  };
}

function summarizeInbox(inbox: InboxFacts, orders: OrderView[]): NonNullable<RunReport['inbox']> {
  const messagesPerOrder: Record<string, number> = {};
  for (const order of orders) increment(messagesPerOrder, String(inbox.messagesPerOrder[order.orderId] ?? 0));
  const messages = Object.values(inbox.messagesPerOrder).reduce((sum, count) => sum + count, 0);
  return { url: inbox.webUrl, messages: messages + inbox.withoutOrderId, messagesPerOrder };
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
