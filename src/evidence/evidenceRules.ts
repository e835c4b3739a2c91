// The one place that decides what a provider's answer about an attempt means; pure, table-tested.
// The rules and why: docs/design.md §5, "What counts as evidence".
import { sesConfigurationSetOf, whyCannotAsk, type SendDestination } from './destination';
import type { LookupAnswer, LookupEntry } from './lookupAnswer';
import { expectedMessageIdOf, sameMessageId } from './messageIdentity';

/** What the dispatch fence recorded about the attempt, on Postgres's clock. */
export interface DispatchedAttempt {
  orderId: string;
  attempt: number;
  sendKey: string;
  /** Null when dispatched before migration 0015. */
  destination: SendDestination | null;
  dispatchedAt: Date;
  /** The dispatching execution's send timeout: its request cannot have outlived it. */
  sendTimeoutMs: number | null;
  keyFirstDispatchedAt: Date;
}

export interface EvidenceTiming {
  settleDelayMs: number;
  retentionMs: number | null;
  /** How long after the fence its own execution saw the request end; absent when nobody saw it. */
  requestEndedWithinMs?: number;
  /** The asking worker's send timeout, for an attempt that recorded none. */
  fallbackSendTimeoutMs: number;
}

export type EvidenceVerdict =
  | { kind: 'found'; via: 'lookup' | 'webhook'; providerMessageId: string | null }
  | { kind: 'not_found'; sinceDispatchMs: number }
  | { kind: 'inconclusive'; reason: string }
  /** Too early for "not found" to count: ask again at `until` (Postgres's clock). */
  | { kind: 'wait_until'; until: Date; reason: string };

/** Dispatch + how long the request may have lasted + the settle delay. */
export function notFoundCountsFrom(attempt: DispatchedAttempt, timing: EvidenceTiming): Date {
  const requestMayLastMs =
    timing.requestEndedWithinMs ?? attempt.sendTimeoutMs ?? timing.fallbackSendTimeoutMs;
  return new Date(attempt.dispatchedAt.getTime() + requestMayLastMs + timing.settleDelayMs);
}

export function whyLookupCannotDecide(attempt: DispatchedAttempt, asking: SendDestination): string | null {
  return whyCannotAsk(attempt.destination, asking);
}

export function entryIsOurs(entry: LookupEntry, attempt: DispatchedAttempt): boolean {
  const expectedId =
    attempt.destination === null ? null : expectedMessageIdOf(attempt.destination, attempt.sendKey);
  let matched = false;
  if (entry.sendKey !== undefined) {
    if (entry.sendKey !== attempt.sendKey) return false;
    matched = true;
  }
  if (expectedId !== null) {
    // Where we chose the message id (Mailgun), it must be there.
    if (entry.messageId === undefined || !sameMessageId(entry.messageId, expectedId)) return false;
    matched = true;
  }
  return matched;
}

export function judgeLookup(input: {
  attempt: DispatchedAttempt;
  asking: SendDestination;
  answer: Exclude<LookupAnswer, { kind: 'failed' }>;
  now: Date;
  timing: EvidenceTiming;
}): EvidenceVerdict {
  const { attempt, answer, now, timing } = input;
  const elsewhere = whyLookupCannotDecide(attempt, input.asking);
  if (elsewhere !== null) return { kind: 'inconclusive', reason: elsewhere };
  if (answer.kind === 'unanswerable') return { kind: 'inconclusive', reason: answer.reason };

  const ours = answer.entries.filter((entry) => entryIsOurs(entry, attempt));
  const first = ours[0];
  if (first !== undefined) {
    return { kind: 'found', via: 'lookup', providerMessageId: first.messageId ?? null };
  }
  // Entries the filter should have left out mean the provider did not apply it.
  const strangers = answer.entries.filter((entry) =>
    answer.filteredBy === 'send' ? true : entry.orderId !== undefined && entry.orderId !== attempt.orderId,
  );
  if (strangers.length > 0) {
    return {
      kind: 'inconclusive',
      reason:
        `the lookup returned ${strangers.length} message(s) that its filter (by ${answer.filteredBy}) should have ` +
        'left out: the provider did not apply it, so a missing message proves nothing',
    };
  }
  if (!answer.complete) {
    return {
      kind: 'inconclusive',
      reason: `the lookup's answer is not complete${answer.incompleteReason === undefined ? '' : ` (${answer.incompleteReason})`}`,
    };
  }
  const countsFrom = notFoundCountsFrom(attempt, timing);
  const sinceDispatchMs = now.getTime() - attempt.dispatchedAt.getTime();
  if (now.getTime() < countsFrom.getTime()) {
    return {
      kind: 'wait_until',
      until: countsFrom,
      reason:
        `the lookup found nothing ${seconds(sinceDispatchMs)} s after the dispatch, but its request may have ` +
        `lasted until ${describeRequestEnd(attempt, timing)} and the provider's settle delay is ` +
        `${seconds(timing.settleDelayMs)} s: its log may not show the message yet`,
    };
  }
  if (timing.retentionMs !== null) {
    const sinceKeyFirstMs = now.getTime() - attempt.keyFirstDispatchedAt.getTime();
    if (sinceKeyFirstMs > timing.retentionMs) {
      return {
        kind: 'inconclusive',
        reason:
          `the lookup found nothing, but the first request with this key is ${seconds(sinceKeyFirstMs)} s old, ` +
          `beyond the provider's retention (${seconds(timing.retentionMs)} s): it may have forgotten the message`,
      };
    }
  }
  return { kind: 'not_found', sinceDispatchMs };
}

export interface StoredProviderEvent {
  sendKey: string | null;
  providerMessageId: string | null;
  occurredAt: Date;
  eventType: string;
  /** SES only (null before migration 0052). */
  sendingAccount?: string | null;
  configurationSet?: string | null;
}

/** SendGrid stamps events to the second and its clock is not ours: tolerate this much before the dispatch. */
const EVENT_CLOCK_TOLERANCE_MS = 2_000;

export type WebhookVerdict =
  | { kind: 'found'; event: StoredProviderEvent }
  | { kind: 'ask-lookup'; event: StoredProviderEvent }
  /** `elsewhere`: events from another SES configuration set or account. */
  | { kind: 'none'; ignored: number; elsewhere: number };

export function judgeWebhookEvents(input: {
  attempt: DispatchedAttempt;
  events: StoredProviderEvent[];
  providerHasLookup: boolean;
  /** Its SES account stands in for an attempt dispatched before migration 0052 recorded one. */
  asking?: SendDestination | null;
}): WebhookVerdict {
  const { attempt } = input;
  const expectedId =
    attempt.destination === null ? null : expectedMessageIdOf(attempt.destination, attempt.sendKey);
  const notBefore = attempt.dispatchedAt.getTime() - EVENT_CLOCK_TOLERANCE_MS;
  const fromElsewhere = input.events.filter(
    (event) => whyEventFromElsewhere(event, attempt, input.asking ?? null) !== null,
  );
  const ours = input.events.filter(
    (event) =>
      !fromElsewhere.includes(event) &&
      event.sendKey === attempt.sendKey &&
      (expectedId === null ||
        (event.providerMessageId !== null && sameMessageId(event.providerMessageId, expectedId))) &&
      event.occurredAt.getTime() >= notBefore,
  );
  const first = ours[0];
  if (first === undefined) {
    return { kind: 'none', ignored: input.events.length, elsewhere: fromElsewhere.length };
  }
  return input.providerHasLookup ? { kind: 'ask-lookup', event: first } : { kind: 'found', event: first };
}

/** SES only: why an event is not this attempt's for its configuration set or account (docs/design.md §5). */
export function whyEventFromElsewhere(
  event: StoredProviderEvent,
  attempt: DispatchedAttempt,
  asking: SendDestination | null,
): string | null {
  const destination = attempt.destination;
  if (destination === null || destination.provider !== 'ses') return null;
  const configurationSet = sesConfigurationSetOf(destination);
  const account =
    destination.account ?? (asking !== null && asking.provider === 'ses' ? (asking.account ?? null) : null);
  if (configurationSet === null || account === null) {
    return 'the attempt records no SES configuration set or account, so no SES event can be tied to it';
  }
  if ((event.configurationSet ?? null) !== configurationSet) {
    return `the event is from configuration set ${event.configurationSet ?? '(none)'}, the attempt's is ${configurationSet}`;
  }
  if ((event.sendingAccount ?? null) !== account) {
    return `the event is from account ${event.sendingAccount ?? '(none)'}, the attempt's is ${account}`;
  }
  return null;
}

function describeRequestEnd(attempt: DispatchedAttempt, timing: EvidenceTiming): string {
  if (timing.requestEndedWithinMs !== undefined) {
    return `it ended, ${seconds(timing.requestEndedWithinMs)} s after the dispatch`;
  }
  const own = attempt.sendTimeoutMs;
  return own === null
    ? `this worker's send timeout (${seconds(timing.fallbackSendTimeoutMs)} s; the attempt's own was not recorded)`
    : `its send timeout (${seconds(own)} s after the dispatch)`;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

export type PolicyDuplicateVerdict =
  { kind: 'duplicate' } | { kind: 'single' } | { kind: 'undecided'; reason: string };

/** Whether an assume-failed re-send doubled the first: docs/design.md, "The second look". */
export function judgePolicyDuplicate(input: {
  resend: DispatchedAttempt;
  asking: SendDestination;
  answer: Exclude<LookupAnswer, { kind: 'failed' }>;
  now: Date;
  timing: EvidenceTiming;
}): PolicyDuplicateVerdict {
  const { resend, answer, now, timing } = input;
  const verdict = judgeLookup({ attempt: resend, asking: input.asking, answer, now, timing });
  if (verdict.kind !== 'found' || answer.kind !== 'entries') {
    return { kind: 'undecided', reason: 'the lookup does not show the re-send yet' };
  }
  if (now.getTime() < notFoundCountsFrom(resend, timing).getTime()) {
    return { kind: 'undecided', reason: 'too early: the lookup may not show every message of the key yet' };
  }
  const ours = answer.entries.filter((entry) => entryIsOurs(entry, resend));
  const distinct = new Set(
    ours.map((entry, index) =>
      entry.messageId === undefined && entry.acceptedAt === undefined
        ? `entry ${index}`
        : `${entry.messageId ?? ''}|${entry.acceptedAt?.getTime() ?? ''}`,
    ),
  );
  if (distinct.size >= 2) return { kind: 'duplicate' };
  if (!answer.complete) return { kind: 'undecided', reason: "the lookup's answer is not complete" };
  return { kind: 'single' };
}
