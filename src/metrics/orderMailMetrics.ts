// The product's own metrics. They are made on the Temporal runtime's metric meter, so they leave the worker
// through the same exporter as the SDK's metrics (Prometheus, or OTLP if an adopter configures that), in
// one scrape, with no second metrics library. Names follow Prometheus conventions; deploy/prometheus/alerts.yml
// uses them.
import type { MetricMeter } from '@temporalio/common';
import type { StuckSendingRows } from '../db/mailLogGauges';
import type { SendHoldGauge } from '../db/sendHolds';
import type { MailOutcome, UnknownSettlement } from '../shared/mailOutcome';

export const ORDER_MAIL_METRICS = {
  /** Counter {outcome, provider}: requests made to the mail API, by classified outcome. */
  sends: 'order_mail_sends_total',
  /** Histogram {outcome, provider}: how long one request to the mail API took, in seconds. */
  sendDuration: 'order_mail_send_duration_seconds',
  /**
   * Counter {settled_by, verification}: unknown outcomes, by how they were settled (verified-accepted,
   * verified-not-sent, assume-sent, assume-failed, idempotent-retry) and how verification went (lookup,
   * webhook, inconclusive, none).
   */
  unknownOutcomes: 'order_mail_unknown_outcomes_total',
  /** Counter {conflict}: a claim or a dispatch fence that found the row not this attempt's to send. */
  claimConflicts: 'order_mail_claim_conflicts_total',
  /**
   * Gauge {phase}: rows stuck in 'sending' (should be 0), as src/db/mailLogGauges.ts defines it: `dispatched`,
   * past the fence longer ago than the send timeout + a minute; `undispatched`, waiting far longer than the
   * queue ahead of it explains. A healthy backlog under a rate limit is neither.
   */
  stuckSending: 'order_mail_stuck_sending_rows',
  /**
   * Counter {reason}: confirmed orders a reconciliation sweep found with no log row and could not start
   * (should stay 0): `closed-without-row`, the run the sweep had already started again closed before its
   * first claim once more; `workflow-id-taken`, a workflow of another type holds the order's id. Each sweep
   * that finds such an order counts it again, so the counter rises for as long as the order is left.
   */
  ordersLeftWithoutMail: 'order_mail_orders_left_without_mail_total',
  /**
   * Counter {provider, reason}: new attempts by the provider the claim chose and why (src/shared/providerChoice.ts:
   * first, pinned, after-not-sent, skipped-unhealthy, skipped-by-operator, all-unavailable, bound). Anything
   * but `first` rising is failover at work.
   */
  providerChoices: 'order_mail_provider_choices_total',
  /**
   * Counter {provider}: claims that found the order's mail bound to a provider the worker is not configured
   * for, and failed the order at once (ProviderNotConfigured). Should stay 0: drain a provider, never remove it
   * while rows are bound to it (docs/providers.md, "Draining a provider").
   */
  ordersBoundToUnconfiguredProvider: 'order_mail_orders_bound_to_unconfigured_provider_total',
  /** Counter {provider}: sends that counted against a provider's health (not sent: refused, 5xx, 429). */
  providerFailures: 'order_mail_provider_failures_total',
  /** Counter {provider}: times a provider's failures in a row reached the threshold, so new attempts skip it. */
  providerSkips: 'order_mail_provider_skips_total',
  /**
   * Gauge {scope}: how long an operator's hold on sends has been in force, in seconds ('*': every provider);
   * 0 once lifted. Above 0, no send through that scope leaves (npm run ops -- hold).
   */
  sendHoldSeconds: 'order_mail_send_hold_seconds',
  /** Gauge {scope}: orders whose runs wait out that hold (src/db/sendHolds.ts); 0 once lifted. */
  heldOrders: 'order_mail_held_orders',
  /**
   * Counter {provider, result}: second looks at mails the assume-sent policy recorded as sent without evidence
   * (src/activities/secondLook.ts): `reopened`, the lookup proved it not sent and the mail was sent again;
   * `found`, the provider has it.
   */
  secondLooks: 'order_mail_second_looks_total',
  /**
   * Counter {provider}: attempts the assume-failed policy sent again whose first request a later lookup shows
   * the provider took: the policy's own duplicates (the customer got two mails).
   */
  policyDuplicates: 'order_mail_policy_duplicates_total',
  /**
   * Counter {provider, outcome}: witness probes (src/verification/witnessProbe.ts) by their send's outcome
   * (accepted, rejected, not_sent, unknown), and `rate_limited` when one was asked for but another probe of the
   * destination had left within the interval. `rejected` means the sink is refused or suppressed.
   */
  witnessProbes: 'order_mail_witness_probes_total',
} as const;

/** Seconds. A mail API answers in well under a second; the tail goes up to the overall HTTP deadline. */
export const SEND_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * - held-elsewhere: another workflow id holds the order's claim;
 * - already-sent: a new run (duplicate start, reset) found the mail sent;
 * - row-changed: the row changed between two claim statements, so the claim looked again;
 * - claim-lost: the dispatch fence found the claim taken away (an operator moved the row);
 * - already-dispatched: the dispatch fence found this attempt's request already made (a re-executed send).
 */
export type ClaimConflict =
  'held-elsewhere' | 'already-sent' | 'row-changed' | 'claim-lost' | 'already-dispatched';

/** How an unknown outcome was settled: verified with the provider, or by a policy (or a retry under the key). */
/** A witness probe that was asked for and not sent, because another of its destination left within the interval. */
export type WitnessProbeOutcome = 'rate_limited';

export type UnknownSettledBy = UnknownSettlement | 'verified-accepted' | 'verified-not-sent';

export interface OrderMailMetrics {
  /** `provider`: the attempt's (failover); the worker's first provider when absent. */
  sendFinished(outcome: MailOutcome, durationSeconds: number, provider?: string): void;
  providerChosen(provider: string, reason: string): void;
  providerFailed(provider: string, skipStarted: boolean): void;
  orderBoundToUnconfiguredProvider(provider: string): void;
  secondLookDone(provider: string, result: 'reopened' | 'found'): void;
  policyDuplicateShown(provider: string): void;
  unknownOutcomeSettled(
    settledBy: UnknownSettledBy,
    verification?: 'lookup' | 'webhook' | 'inconclusive' | 'none',
  ): void;
  claimConflict(conflict: ClaimConflict): void;
  setStuckSendingRows(rows: StuckSendingRows): void;
  /** The holds in force now; a scope seen before and absent now goes to 0. */
  setSendHolds(holds: readonly SendHoldGauge[]): void;
  orderLeftWithoutMail(reason: 'closed-without-row' | 'workflow-id-taken'): void;
  witnessProbeFinished(provider: string, outcome: MailOutcome | WitnessProbeOutcome): void;
}

export function createOrderMailMetrics(meter: MetricMeter, labels: { provider: string }): OrderMailMetrics {
  const sends = meter.createCounter(
    ORDER_MAIL_METRICS.sends,
    undefined,
    'Requests made to the mail API, by outcome',
  );
  const sendDuration = meter.createHistogram(
    ORDER_MAIL_METRICS.sendDuration,
    'float',
    's',
    'Duration of one request to the mail API',
  );
  const unknownOutcomes = meter.createCounter(
    ORDER_MAIL_METRICS.unknownOutcomes,
    undefined,
    'Unknown send outcomes, by how they were settled',
  );
  const claimConflicts = meter.createCounter(
    ORDER_MAIL_METRICS.claimConflicts,
    undefined,
    'Claims and dispatch fences that found the row not this attempt’s to send',
  );
  const stuckSending = meter.createGauge(
    ORDER_MAIL_METRICS.stuckSending,
    'int',
    undefined,
    'Rows stuck in sending: dispatched and unrecorded past the send timeout, or left behind by their queue',
  );
  const ordersLeftWithoutMail = meter.createCounter(
    ORDER_MAIL_METRICS.ordersLeftWithoutMail,
    undefined,
    'Confirmed orders without a log row that a reconciliation sweep could not start',
  );
  const providerChoices = meter.createCounter(
    ORDER_MAIL_METRICS.providerChoices,
    undefined,
    'New attempts by the provider the claim chose, and why',
  );
  const boundToUnconfigured = meter.createCounter(
    ORDER_MAIL_METRICS.ordersBoundToUnconfiguredProvider,
    undefined,
    'Orders failed at once because their mail is bound to a provider the worker is not configured for',
  );
  const providerFailures = meter.createCounter(
    ORDER_MAIL_METRICS.providerFailures,
    undefined,
    'Sends that counted against a provider’s health',
  );
  const secondLooks = meter.createCounter(
    ORDER_MAIL_METRICS.secondLooks,
    undefined,
    'Second looks at mails recorded as sent without evidence, by what they found',
  );
  const policyDuplicates = meter.createCounter(
    ORDER_MAIL_METRICS.policyDuplicates,
    undefined,
    'Attempts the assume-failed policy sent again whose first request the provider had taken',
  );
  const providerSkips = meter.createCounter(
    ORDER_MAIL_METRICS.providerSkips,
    undefined,
    'Times a provider started being skipped by new attempts',
  );
  const sendHoldSeconds = meter.createGauge(
    ORDER_MAIL_METRICS.sendHoldSeconds,
    'float',
    's',
    'How long an operator’s hold on sends has been in force (0: not held)',
  );
  const heldOrders = meter.createGauge(
    ORDER_MAIL_METRICS.heldOrders,
    'int',
    undefined,
    'Orders whose runs wait out an operator’s hold on sends',
  );
  // Every provider's scope exists at 0 from the start, so a dashboard shows "not held" rather than nothing.
  const holdScopes = new Set<string>(['*']);
  sendHoldSeconds.set(0, { scope: '*' });
  heldOrders.set(0, { scope: '*' });
  const witnessProbes = meter.createCounter(
    ORDER_MAIL_METRICS.witnessProbes,
    undefined,
    'Witness probes, by the outcome of their send',
  );
  // The series the alerts watch for a single order exist at 0 from the start: Prometheus' increase() cannot
  // see a counter's first increment when its series is born at 1, and on a quiet system that first one is the
  // only one (OrderMailAssumedSentUnverified, OrderMailOrdersLeftWithoutMail).
  unknownOutcomes.add(0, { settled_by: 'assume-sent', verification: 'inconclusive' });
  ordersLeftWithoutMail.add(0, { reason: 'closed-without-row' });
  ordersLeftWithoutMail.add(0, { reason: 'workflow-id-taken' });
  policyDuplicates.add(0, { provider: labels.provider });
  witnessProbes.add(0, { provider: labels.provider, outcome: 'rejected' });
  return {
    secondLookDone(provider, result) {
      secondLooks.add(1, { provider, result });
    },
    policyDuplicateShown(provider) {
      policyDuplicates.add(1, { provider });
    },
    sendFinished(outcome, durationSeconds, provider = labels.provider) {
      sends.add(1, { outcome, provider });
      sendDuration.record(durationSeconds, { outcome, provider });
    },
    providerChosen(provider, reason) {
      providerChoices.add(1, { provider, reason });
    },
    providerFailed(provider, skipStarted) {
      providerFailures.add(1, { provider });
      if (skipStarted) providerSkips.add(1, { provider });
    },
    orderBoundToUnconfiguredProvider(provider) {
      boundToUnconfigured.add(1, { provider });
    },
    unknownOutcomeSettled(settledBy, verification = 'none') {
      unknownOutcomes.add(1, { settled_by: settledBy, verification });
    },
    claimConflict(conflict) {
      claimConflicts.add(1, { conflict });
    },
    setStuckSendingRows(rows) {
      stuckSending.set(rows.dispatched, { phase: 'dispatched' });
      stuckSending.set(rows.undispatched, { phase: 'undispatched' });
    },
    setSendHolds(holds) {
      for (const scope of holdScopes) {
        const hold = holds.find((row) => row.scope === scope);
        sendHoldSeconds.set(hold?.heldSeconds ?? 0, { scope });
        heldOrders.set(hold?.heldOrders ?? 0, { scope });
      }
      for (const hold of holds) {
        if (holdScopes.has(hold.scope)) continue;
        holdScopes.add(hold.scope);
        sendHoldSeconds.set(hold.heldSeconds, { scope: hold.scope });
        heldOrders.set(hold.heldOrders, { scope: hold.scope });
      }
    },
    orderLeftWithoutMail(reason) {
      ordersLeftWithoutMail.add(1, { reason });
    },
    witnessProbeFinished(provider, outcome) {
      witnessProbes.add(1, { provider, outcome });
    },
  };
}

/** For tests and tools that run the activities without a metrics pipeline. */
export const noOrderMailMetrics: OrderMailMetrics = {
  sendFinished: () => undefined,
  providerChosen: () => undefined,
  providerFailed: () => undefined,
  orderBoundToUnconfiguredProvider: () => undefined,
  secondLookDone: () => undefined,
  policyDuplicateShown: () => undefined,
  unknownOutcomeSettled: () => undefined,
  claimConflict: () => undefined,
  setStuckSendingRows: () => undefined,
  setSendHolds: () => undefined,
  orderLeftWithoutMail: () => undefined,
  witnessProbeFinished: () => undefined,
};
