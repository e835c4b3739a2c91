// "Not found" counts only when the same lookup already shows a later send we know was accepted.
// Why, and what each provider's ordering assumes: docs/providers.md, "A lookup that is behind".
import type { DispatchedAttempt, EvidenceTiming } from './evidenceRules';
import { entryIsOurs, judgeLookup } from './evidenceRules';
import type { SendDestination } from './destination';
import type { LookupAnswer, LookupEntry, LookupQuery } from './lookupAnswer';

/** A send we know was accepted: its attempt got a 2xx. */
export interface WitnessSend {
  orderId: string;
  sendKey: string;
  destination: SendDestination;
  dispatchedAt: Date;
  /** Its recorded send timeout: the provider took it by dispatchedAt + this. */
  sendTimeoutMs: number;
}

/** The order a provider's lookup shows sends in: docs/providers.md, "What a witness assumes, per provider". */
export type WitnessOrdering =
  { kind: 'taken-order' } | { kind: 'trusted-after'; afterMs: number } | { kind: 'watermark' };

/** The witness query's bounds, on Postgres's clock. */
export interface WitnessBounds {
  /** The attempt's end (dispatch + its send timeout). */
  dispatchedFrom: Date;
  /** The witness's request had ended by this; null: no such bound. */
  endedBy: Date | null;
}

/** The bounds a witness must lie in; the end rounds up 1 ms since a Date loses Postgres's microseconds. */
export function witnessBounds(input: {
  attempt: DispatchedAttempt;
  timing: EvidenceTiming;
  ordering: WitnessOrdering;
  now: Date;
}): WitnessBounds {
  const { attempt, timing, ordering } = input;
  const requestMayLastMs = attempt.sendTimeoutMs ?? timing.fallbackSendTimeoutMs;
  return {
    dispatchedFrom: new Date(attempt.dispatchedAt.getTime() + requestMayLastMs + 1),
    endedBy: ordering.kind === 'trusted-after' ? new Date(input.now.getTime() - ordering.afterMs) : null,
  };
}

export function witnessQualifies(candidate: WitnessSend, bounds: WitnessBounds): boolean {
  const left = candidate.dispatchedAt.getTime();
  if (left < bounds.dispatchedFrom.getTime()) return false;
  return bounds.endedBy === null || left + candidate.sendTimeoutMs <= bounds.endedBy.getTime();
}

/** Whether the answer shows the witness inside its watermark (true where there is none). */
export function shownWithinWatermark(
  ordering: WitnessOrdering,
  answer: Extract<LookupAnswer, { kind: 'entries' }>,
  entry: LookupEntry,
): boolean {
  if (ordering.kind !== 'watermark' || answer.watermark === undefined) return true;
  return entry.acceptedAt !== undefined && entry.acceptedAt.getTime() <= answer.watermark.getTime();
}

export type FreshnessVerdict =
  /** The lookup shows a later send we know it took: "not found" counts. */
  | { kind: 'fresh'; witness: WitnessSend }
  /** No witness yet; `noWitnessFrom` is set when there was no candidate, so a probe may help. */
  | { kind: 'wait'; waitMs: number; reason: string; noWitnessFrom?: Date }
  | { kind: 'inconclusive'; reason: string };

export interface FreshnessTiming {
  /** MAIL_VERIFY_DEADLINE_MS, counted in waits from the first ask. */
  deadlineMs: number;
  /** The settle delay: a lookup behind by less catches up in it. */
  askAgainAfterMs: number;
  waitsSoFar: number;
}

/** Whether the waits so far used up the deadline; at least one wait is always given. */
function deadlinePassed(freshness: FreshnessTiming): boolean {
  return (
    freshness.waitsSoFar >= 1 && freshness.waitsSoFar * freshness.askAgainAfterMs >= freshness.deadlineMs
  );
}

/** Never ask again sooner than this: a lookup is a request to the provider. */
const MIN_WAIT_MS = 250;

export function judgeFreshness(input: {
  attempt: DispatchedAttempt;
  timing: EvidenceTiming;
  freshness: FreshnessTiming;
  now: Date;
  candidate: WitnessSend | null;
  shown: boolean;
}): FreshnessVerdict {
  const { candidate } = input;
  if (candidate !== null && input.shown) return { kind: 'fresh', witness: candidate };
  const why =
    candidate === null
      ? 'no send we know was accepted (a 2xx) has been dispatched to the same place since this attempt ' +
        'ended (its dispatch plus its send timeout), late enough for this lookup, so nothing shows that the ' +
        'lookup has caught up with it'
      : `the lookup does not show yet order ${candidate.orderId}'s send, which got its 2xx and was dispatched ` +
        'after this attempt ended: it is behind, and may not show this attempt yet either';
  if (deadlinePassed(input.freshness)) {
    return {
      kind: 'inconclusive',
      reason:
        `the lookup found nothing, but ${why} (asked ${input.freshness.waitsSoFar + 1} times over ` +
        `${seconds(input.freshness.waitsSoFar * input.freshness.askAgainAfterMs)} s)`,
    };
  }
  return {
    kind: 'wait',
    waitMs: Math.max(MIN_WAIT_MS, input.freshness.askAgainAfterMs),
    reason: `the lookup found nothing, but ${why}`,
  };
}

/** Finds a candidate, asks the same lookup about it, and judges; a failed lookup counts as not shown. */
export async function checkFreshness(input: {
  attempt: DispatchedAttempt;
  timing: EvidenceTiming;
  freshness: FreshnessTiming;
  /** Postgres's now(), read before any lookup about the witness. */
  now: Date;
  ordering: WitnessOrdering;
  findCandidate(bounds: WitnessBounds): Promise<WitnessSend | null>;
  lookUp(query: LookupQuery): Promise<LookupAnswer>;
}): Promise<FreshnessVerdict> {
  const bounds = witnessBounds(input);
  const found = await input.findCandidate(bounds);
  // Checked again so that the rule holds whatever the query returns.
  const candidate = found !== null && witnessQualifies(found, bounds) ? found : null;
  let shown = false;
  if (candidate !== null) {
    const answer = await input.lookUp({
      orderId: candidate.orderId,
      sendKey: candidate.sendKey,
      destination: candidate.destination,
    });
    if (answer.kind !== 'failed') {
      const witnessAttempt: DispatchedAttempt = {
        orderId: candidate.orderId,
        attempt: 0,
        sendKey: candidate.sendKey,
        destination: candidate.destination,
        dispatchedAt: candidate.dispatchedAt,
        sendTimeoutMs: candidate.sendTimeoutMs,
        keyFirstDispatchedAt: candidate.dispatchedAt,
      };
      const verdict = judgeLookup({
        attempt: witnessAttempt,
        asking: candidate.destination,
        answer,
        now: input.now,
        timing: input.timing,
      });
      const entry =
        answer.kind === 'entries'
          ? answer.entries.find((listed) => entryIsOurs(listed, witnessAttempt))
          : undefined;
      shown =
        verdict.kind === 'found' &&
        answer.kind === 'entries' &&
        entry !== undefined &&
        shownWithinWatermark(input.ordering, answer, entry);
    }
  }
  const verdict = judgeFreshness({ ...input, candidate, shown });
  return verdict.kind === 'wait' && candidate === null
    ? { ...verdict, noWitnessFrom: bounds.dispatchedFrom }
    : verdict;
}

function seconds(ms: number): string {
  return String(Math.round(ms / 100) / 10);
}

/** An incomplete or wrongly filtered list may answer rightly when asked again, until the same deadline. */
export function answerMayDecideLater(answer: LookupAnswer, attempt: DispatchedAttempt): boolean {
  if (answer.kind !== 'entries') return false;
  if (!answer.complete) return true;
  return answer.entries.some((entry) =>
    answer.filteredBy === 'send' ? !entryIsOurs(entry, attempt) : entry.orderId !== attempt.orderId,
  );
}

export function askAgainOrGiveUp(input: {
  attempt: DispatchedAttempt;
  timing: EvidenceTiming;
  freshness: FreshnessTiming;
  now: Date;
  reason: string;
}): FreshnessVerdict {
  if (deadlinePassed(input.freshness)) {
    return { kind: 'inconclusive', reason: `${input.reason}, and still so after waiting` };
  }
  return {
    kind: 'wait',
    waitMs: Math.max(MIN_WAIT_MS, input.freshness.askAgainAfterMs),
    reason: input.reason,
  };
}
