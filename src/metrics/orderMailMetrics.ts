// The product's metrics, on the Temporal runtime's meter so they share the SDK's exporter and scrape. Each is
// described in docs/production.md, "Metrics, health, alerts"; deploy/prometheus/alerts.yml uses the names.
import type { MetricMeter } from '@temporalio/common';
import type { OverdueSendingRows } from '../db/mailLogGauges';
import type { SendHoldGauge } from '../db/sendHolds';
import type { MailOutcome, UnknownSettlement } from '../shared/mailOutcome';

export const ORDER_MAIL_METRICS = {
  sends: 'order_mail_sends_total',
  sendDuration: 'order_mail_send_duration_seconds',
  unknownOutcomes: 'order_mail_unknown_outcomes_total',
  claimConflicts: 'order_mail_claim_conflicts_total',
  overdueSending: 'order_mail_stuck_sending_rows',
  ordersLeftWithoutMail: 'order_mail_orders_left_without_mail_total',
  providerChoices: 'order_mail_provider_choices_total',
  ordersBoundToUnconfiguredProvider: 'order_mail_orders_bound_to_unconfigured_provider_total',
  providerFailures: 'order_mail_provider_failures_total',
  providerSkips: 'order_mail_provider_skips_total',
  sendHoldSeconds: 'order_mail_send_hold_seconds',
  heldOrders: 'order_mail_held_orders',
  secondLooks: 'order_mail_second_looks_total',
  policyDuplicates: 'order_mail_policy_duplicates_total',
  witnessProbes: 'order_mail_witness_probes_total',
} as const;

/** Seconds. A mail API answers in well under a second; the tail goes up to the overall HTTP deadline. */
export const SEND_DURATION_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** row-changed: the claim looked again; already-dispatched: a re-executed send found its request made. */
export type ClaimConflict =
  'held-elsewhere' | 'already-sent' | 'row-changed' | 'claim-lost' | 'already-dispatched';

/** Asked for, not sent: another probe of the destination left within the interval. */
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
  setOverdueSendingRows(rows: OverdueSendingRows): void;
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
  const overdueSending = meter.createGauge(
    ORDER_MAIL_METRICS.overdueSending,
    'int',
    undefined,
    'Overdue rows in sending: dispatched and unrecorded past the send timeout, or left behind by their queue',
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
  // Born at 0 so increase() sees a single order's first increment (docs/production.md, "Metrics, health, alerts").
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
    setOverdueSendingRows(rows) {
      overdueSending.set(rows.dispatched, { phase: 'dispatched' });
      overdueSending.set(rows.undispatched, { phase: 'undispatched' });
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
  setOverdueSendingRows: () => undefined,
  setSendHolds: () => undefined,
  orderLeftWithoutMail: () => undefined,
  witnessProbeFinished: () => undefined,
};
