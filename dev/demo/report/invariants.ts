// The run's verdict (issue 4, docs/design.md §3): which invariants a run is held to, whether each holds, and the
// exit code that follows. Judged from facts only (facts.ts, seen per order through orderViews.ts): what the
// sandbox received, what order_mail_log and order_mail_attempts say, the workflows' statuses in Temporal, and
// the inbox. The guarantees every run is held to are here; those only a scenario can break (operators, lying
// webhooks, failover) are scenarioInvariants.ts's. Pure, so the invariants themselves are unit-tested
// (test/demo/report.test.ts, test/demo/verificationInvariants.test.ts).
import { MAIL_PROVIDER_FACTS, type MailProviderName } from '../../../src/mail/providers/mailProvider';
import type { UnknownOutcomePolicy } from '../../../src/shared/mailOutcome';
import type { CustomerOutcomes } from './customerOutcomes';
import type { FailoverSection } from './failoverReport';
import { providerChangeInvariants, type ProviderChangeSection } from './providerChangeReport';
import type { InboxFacts, RunFacts } from './facts';
import { EXAMPLES, judged, type InvariantResult } from './invariantResult';
import { actsBehind, runClosedByOperator } from './operatorReport';
import { isTerminal, type OrderView } from './orderViews';
import {
  failoverInvariants,
  lookupReorderInvariant,
  noRefusedWebhookWroteARow,
  operatorInvariants,
  sendHoldInvariants,
  upgradeInvariants,
  webhookEvidenceInvariants,
} from './scenarioInvariants';

/** Every invariant the run is held to, in the report's order, each judged. */
export function judgeRun(
  facts: RunFacts,
  seen: {
    orders: OrderView[];
    customers: CustomerOutcomes;
    failover: FailoverSection | null;
    providerChange?: ProviderChangeSection | null;
  },
): InvariantResult[] {
  const { orders } = seen;
  const operatorFacts = facts.operators ?? null;
  const behind =
    operatorFacts === null ? undefined : (broken: string[]) => actsBehind(operatorFacts.acts, broken);
  const invariants = productInvariants(facts.policy, orders, behind);
  if (facts.verification.verifies) {
    const closedByOperator =
      operatorFacts === null ? new Set<string>() : runClosedByOperator(operatorFacts.acts);
    const provider = facts.verification.provider;
    // SES and SendGrid prove a send by its events only: a missing one proves nothing, and the policy decides.
    const webhookOnly =
      provider !== null && MAIL_PROVIDER_FACTS[provider as MailProviderName]?.verification?.lookup === false;
    invariants.push(
      ...verificationInvariants(seen.customers, orders, closedByOperator, webhookOnly, facts.policy),
    );
  }
  if (facts.verification.reorder !== undefined)
    invariants.push(lookupReorderInvariant(facts.verification.reorder));
  if (facts.inbox !== null) invariants.push(inboxInvariant(facts.inbox, orders));
  if (facts.webhooks != null) {
    invariants.push(noRefusedWebhookWroteARow(facts.webhooks));
    invariants.push(...webhookEvidenceInvariants(facts.webhooks, facts.attempts, facts.messages));
  }
  if (operatorFacts !== null) invariants.push(...operatorInvariants(operatorFacts, orders, behind!));
  if (seen.failover !== null) invariants.push(...failoverInvariants(seen.failover));
  if (facts.sendHold != null) invariants.push(...sendHoldInvariants(facts.sendHold));
  if (facts.upgrade != null) invariants.push(...upgradeInvariants(facts.upgrade));
  if (seen.providerChange != null)
    invariants.push(...providerChangeInvariants(seen.providerChange, facts.orderIds));
  return invariants;
}

/** The run passes when every invariant holds. */
export function allHold(invariants: InvariantResult[]): boolean {
  return invariants.every((invariant) => invariant.holds);
}

/** The runner's exit code for a report: 0 when every invariant holds, 1 otherwise. */
export function exitCodeOf(report: { ok: boolean }): number {
  return report.ok ? 0 : 1;
}

/** The guarantees (G1 to G4) as the facts show them, whatever the run did to the system. */
function productInvariants(
  policy: UnknownOutcomePolicy,
  orders: OrderView[],
  /** Set in a run with operators: what they did to the orders that break an invariant. */
  behind: ((broken: string[]) => Record<string, number>) | undefined,
): InvariantResult[] {
  const withOperators = behind !== undefined;
  const invariant = (
    name: string,
    description: string,
    breaks: (order: OrderView) => boolean,
  ): InvariantResult =>
    judged(
      name,
      description,
      orders.filter(breaks).map((order) => order.orderId),
      behind,
    );
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
  /** The provider proves a send by its events only (no lookup): docs/providers.md's "a missing event proves nothing". */
  webhookOnly = false,
  policy: UnknownOutcomePolicy = 'assume-sent',
): InvariantResult[] {
  // An attempt of a run an operator closed mid-send that was settled by the policy without the provider being
  // asked (the run that takes it over and the sweep ask where they can; what is left: a worker that cannot
  // ask). Only that excuses a settlement here, and only on such an order; every customer without a mail
  // still counts in the report's summary.
  const policyPriced = (orderId: string): boolean =>
    closedByOperator.has(orderId) &&
    orders
      .find((order) => order.orderId === orderId)
      ?.attempts.some((attempt) => attempt.outcome === 'unknown' && attempt.verification === null) === true;
  // With a provider verified by its events only, an unknown send it never took has no event, and the policy
  // settles it: under assume-sent its customer has no mail. That is what the docs say of SES and SendGrid, not
  // a broken promise; such orders are counted apart, and nothing else is excused.
  const settledByPolicyWithoutEvent = (order: OrderView): boolean =>
    webhookOnly &&
    policy === 'assume-sent' &&
    order.attempts.some(
      (attempt) => attempt.outcome === 'unknown' && attempt.verification === 'inconclusive',
    );
  const asDocumented = orders.filter(
    (order) => order.messageIds.length === 0 && !order.endedByOperator && settledByPolicyWithoutEvent(order),
  );
  const missing = orders.filter(
    (order) =>
      order.messageIds.length === 0 &&
      !order.endedByOperator &&
      !policyPriced(order.orderId) &&
      !settledByPolicyWithoutEvent(order),
  );
  // A policy settlement is the policy's price (docs/design.md §9) also where an operator cancelled, terminated
  // or resolved the order: a cancel during the settle delay leaves verification inconclusive, and the policy
  // decides.
  const endedByOperator = new Set(
    orders.filter((order) => order.endedByOperator).map((order) => order.orderId),
  );
  const documented = new Set(asDocumented.map((order) => order.orderId));
  const wrong = customers.unknowns.wrongAttempts.filter(
    (attempt) =>
      !(attempt.settlement.startsWith('policy') && endedByOperator.has(attempt.orderId)) &&
      !(attempt.settlement.startsWith('policy') && documented.has(attempt.orderId)) &&
      (attempt.verified || !policyPriced(attempt.orderId)),
  );
  const documentedNote =
    asDocumented.length === 0
      ? ''
      : `; ${asDocumented.length} customers without a mail are the policy's as docs/providers.md says for a ` +
        'provider verified by events only (an unknown send it never took: no event, then assume-sent)';
  return [
    judged(
      'no-customer-without-a-mail',
      'with verification, every customer got a mail, whatever the row says (unless an operator cancelled, ' +
        'terminated or resolved the order, or closed a run mid-send so that the policy settled its attempt)' +
        documentedNote,
      missing.map((order) => order.orderId),
    ),
    {
      name: 'unknowns-settled-right',
      description:
        'every unknown outcome was settled as the provider had it: verified (or assumed) sent only when it had ' +
        'the mail, not sent only when it had none (settlements by the policy are not judged where an operator ended the order or closed a run mid-send)',
      holds: wrong.length === 0,
      // The orders, each once; the count is of the attempts settled wrong.
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
  return judged(
    'inbox-matches-provider',
    'the inbox holds, for every order, exactly the messages the provider accepted, and nothing else',
    inbox.unreadable === null ? [...broken, ...strangers] : [inbox.unreadable],
  );
}
