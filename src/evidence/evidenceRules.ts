// THE EVIDENCE RULES (docs/design.md, "What counts as evidence"): the one place that decides what a provider's
// answer about an attempt means. The verify activity (src/activities/verifyOrderMail.ts) is the only caller
// that asks, for all three askers: the workflow about its own unknown send, the run that takes over a closed
// run's dispatched attempt, and the reconciliation sweep; the sweep's "too young to ask" and the takeover's
// wait use notFoundCountsFrom from here too. Pure: facts in, a verdict out, table-tested without a server.
//
// An answer counts only when it is
// - from where the attempt went: the destination recorded at its dispatch fence (src/evidence/destination.ts);
//   a worker that cannot ask there gets "inconclusive", never "not found";
// - complete: every entry the filter matched was read, and the provider applied the filter (an entry of
//   another send under a send filter, or of another order under an order filter, means it did not);
// - ours: an entry matches only by our send key or the message id this attempt's request carried, compared
//   exactly; the key names this deployment (src/evidence/messageIdentity.ts), so another system's mail on the
//   same account is not ours;
// - after the request could have ended: "not found" counts only once the attempt's own send timeout (or the
//   time its request was seen to end) and the provider's settle delay have passed since its dispatch; before
//   that the verdict is to wait, whoever asks (a second execution of the attempt, ALREADY_DISPATCHED, included);
// - within the provider's retention since the key's first request;
// - authentic, for webhook events: its send key and message id are this attempt's, and it happened at or after
//   the dispatch; an SES event also names the attempt's configuration set and sending account (anyone allowed
//   to publish to the topic signs as genuinely as SES). With a provider that has a lookup, an event never
//   settles alone: the lookup decides.
import { sesConfigurationSetOf, whyCannotAsk, type SendDestination } from './destination';
import type { LookupAnswer, LookupEntry } from './lookupAnswer';
import { expectedMessageIdOf, sameMessageId } from './messageIdentity';

/** What the dispatch fence recorded about the attempt asked about, read with Postgres's now(). */
export interface DispatchedAttempt {
  orderId: string;
  attempt: number;
  /** The send key its request carried. */
  sendKey: string;
  /** Where its request went; null when not recorded (dispatched before migration 0015). */
  destination: SendDestination | null;
  /** When it passed the fence, on Postgres's clock. */
  dispatchedAt: Date;
  /**
   * The send activity's timeout of the execution that dispatched it, on Temporal's word: its request cannot
   * have outlived it (the transport's deadline is inside it). Null when not recorded.
   */
  sendTimeoutMs: number | null;
  /** When the first request with this key left (an earlier attempt's, or this one's). */
  keyFirstDispatchedAt: Date;
}

export interface EvidenceTiming {
  /** The provider's settle delay: how long after a request ended its lookup is known to show it. */
  settleDelayMs: number;
  /** How long the provider keeps what its lookup searches; null when it does not apply. */
  retentionMs: number | null;
  /**
   * How long after the fence this attempt's request was seen to end, by the execution that made it (the run's
   * own send, measured on its worker). Absent when nobody saw it end: a closed run's request, a second
   * execution that found the attempt ALREADY_DISPATCHED, a send whose worker died.
   */
  requestEndedWithinMs?: number;
  /** The send timeout to assume when the attempt's own was not recorded: the asking worker's. */
  fallbackSendTimeoutMs: number;
}

export type EvidenceVerdict =
  /** A request of this send reached the provider. */
  | { kind: 'found'; via: 'lookup' | 'webhook'; providerMessageId: string | null }
  /** The provider, asked where the request went, completely and late enough, has no message of this send. */
  | { kind: 'not_found'; sinceDispatchMs: number }
  /** Nothing to go by; the reason says why, for the attempt's audit row. */
  | { kind: 'inconclusive'; reason: string }
  /** Too early for "not found" to count: ask again at `until` (Postgres's clock). */
  | { kind: 'wait_until'; until: Date; reason: string };

/**
 * The earliest moment a "not found" about this attempt may count: its dispatch, plus as long as its request
 * may have lasted (seen to end, or else its own send timeout), plus the provider's settle delay.
 */
export function notFoundCountsFrom(attempt: DispatchedAttempt, timing: EvidenceTiming): Date {
  const requestMayLastMs =
    timing.requestEndedWithinMs ?? attempt.sendTimeoutMs ?? timing.fallbackSendTimeoutMs;
  return new Date(attempt.dispatchedAt.getTime() + requestMayLastMs + timing.settleDelayMs);
}

/** Whether the worker at `asking` may ask about this attempt at all; the reason when it may not. */
export function whyLookupCannotDecide(attempt: DispatchedAttempt, asking: SendDestination): string | null {
  return whyCannotAsk(attempt.destination, asking);
}

/** Whether an entry of a lookup is this attempt's send: by our key or our message id, compared exactly. */
export function entryIsOurs(entry: LookupEntry, attempt: DispatchedAttempt): boolean {
  const expectedId =
    attempt.destination === null ? null : expectedMessageIdOf(attempt.destination, attempt.sendKey);
  let matched = false;
  if (entry.sendKey !== undefined) {
    if (entry.sendKey !== attempt.sendKey) return false;
    matched = true;
  }
  if (expectedId !== null) {
    // Where we chose the message id ourselves (Mailgun), it is what identifies the message: it must be there.
    if (entry.messageId === undefined || !sameMessageId(entry.messageId, expectedId)) return false;
    matched = true;
  }
  return matched;
}

/** What the lookup's answer says about the attempt, under every rule above. */
export function judgeLookup(input: {
  attempt: DispatchedAttempt;
  asking: SendDestination;
  answer: Exclude<LookupAnswer, { kind: 'failed' }>;
  /** Postgres's now(), read with the attempt. */
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
  // Under a send filter every entry should have been ours; under an order filter, every entry that names its
  // order should name ours (this order's other sends, an earlier re-send or another deployment's, are neither).
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

/** A provider webhook event as stored (src/webhooks/providerEvents.ts), with what identifies its message. */
export interface StoredProviderEvent {
  sendKey: string | null;
  providerMessageId: string | null;
  occurredAt: Date;
  eventType: string;
  /** SES: the account and configuration set the event names (null for other providers, and before 0052). */
  sendingAccount?: string | null;
  configurationSet?: string | null;
}

/**
 * Providers stamp events to the second (SendGrid) and their clocks are not ours: an event up to this much
 * before the dispatch on Postgres's clock may still be of this request. Far less than any settle delay.
 */
const EVENT_CLOCK_TOLERANCE_MS = 2_000;

export type WebhookVerdict =
  /** An authentic event of this attempt, from a provider without a lookup: it settles the send as accepted. */
  | { kind: 'found'; event: StoredProviderEvent }
  /** An event of this attempt, from a provider that has a lookup: ask the lookup (now), it decides. */
  | { kind: 'ask-lookup'; event: StoredProviderEvent }
  /**
   * No event of this attempt; `ignored` counts the stored events of the send that did not qualify, `elsewhere`
   * those of them that came from another configuration set or account than the attempt's (SES).
   */
  | { kind: 'none'; ignored: number; elsewhere: number };

/** Which of the send's stored webhook events count for this attempt, and for how much. */
export function judgeWebhookEvents(input: {
  attempt: DispatchedAttempt;
  events: StoredProviderEvent[];
  /** The provider can also be asked by lookup (Mailgun): then an event never settles alone. */
  providerHasLookup: boolean;
  /**
   * Where the asking worker sends: its account stands in for an SES attempt's that was dispatched before the
   * fence recorded one (migration 0052).
   */
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

/**
 * Why an event cannot be of this attempt for where it came from, or null when it may be. SES only: its event
 * must name the configuration set the attempt's fence recorded and its sending account (the asking worker's
 * SES_ACCOUNT_ID for an attempt dispatched before the account was recorded). Whoever else may publish to the
 * topic (another app, a staging deployment, another account's SES) makes events just as genuinely signed.
 */
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
  /** Two of our messages under the key: the first request was taken too, and the policy's re-send doubled it. */
  | { kind: 'duplicate' }
  /** Only the re-send's message: the first request was not taken (the re-send is its witness). */
  | { kind: 'single' }
  /** Not now: the lookup does not show the re-send yet, or cannot be trusted to list everything. */
  | { kind: 'undecided'; reason: string };

/**
 * The dual of the second look, under assume-failed (docs/design.md, "The second look"): the policy re-sent an
 * attempt it could not verify, under the same key, and the re-send was accepted. Asked about that key once the
 * lookup can be trusted to show the re-send (the same rules as any lookup about it: judgeLookup), the answer
 * says whether the first request was taken too: two distinct messages of ours are the policy's duplicate; the
 * re-send's alone, in a complete answer, means the first was not taken, the re-send (which left after the first
 * ended) being the witness that the lookup is not behind.
 */
export function judgePolicyDuplicate(input: {
  /** The accepted re-send: where it went, its key, its dispatch. */
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
