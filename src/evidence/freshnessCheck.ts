// THE FRESHNESS WITNESS (docs/providers.md, "A lookup that is behind"): a lookup's "not found" for an attempt
// counts only when the same lookup, asked the same way (the same destination), already shows a send we KNOW
// was accepted (it got its 2xx) and whose request left only after this attempt's request had ended (its
// dispatch plus its recorded send timeout). The provider took that send after anything of ours, so a log that
// shows it, read in the order the provider takes sends, would show our message too, had it been accepted. A send
// that left while ours was still on the wire proves nothing: the provider may have taken it first. Where a
// provider's lookup is not in that order (Mailgun), or says how far it is complete (the generic gateway's
// watermark), the witness must also be old enough, or inside that mark (WitnessOrdering). Without a witness,
// the lookup may simply be behind: ask again later, and past a deadline the answer is inconclusive and the
// policy decides.
//
// The verify activity (src/activities/verifyOrderMail.ts) calls checkFreshness where the evidence rules
// (src/evidence/evidenceRules.ts) concluded "not found"; the witness is asked about with the very lookup client
// and the very rules that judged our attempt.
import type { DispatchedAttempt, EvidenceTiming } from './evidenceRules';
import { entryIsOurs, judgeLookup } from './evidenceRules';
import type { SendDestination } from './destination';
import type { LookupAnswer, LookupEntry, LookupQuery } from './lookupAnswer';

/** A send we know was accepted: its attempt got a 2xx, recorded on its log row (src/db/freshnessWitness.ts). */
export interface WitnessSend {
  orderId: string;
  sendKey: string;
  destination: SendDestination;
  /** When its request left (the dispatch fence, Postgres's clock): the provider took it no earlier. */
  dispatchedAt: Date;
  /** Its own recorded send timeout: its 2xx came, and the provider took it, by dispatchedAt + this. */
  sendTimeoutMs: number;
}

/**
 * What a provider's lookup is assumed to show of the order in which it took sends (docs/providers.md, "What a
 * witness assumes"); provider facts (src/mail/providers/*), read by the verifier.
 * - 'taken-order': a lookup that shows a send shows every send taken before it (Postmark: assumed, not
 *   documented).
 * - 'trusted-after': sends may become visible out of order, but one taken at least `afterMs` before the lookup
 *   is there, and so is everything taken before it (Mailgun's events, "trustworthy" past a threshold).
 * - 'watermark': the answer says up to when its index is complete (the generic gateway); a witness counts only
 *   at or before that mark. An answer without one is read as 'taken-order'.
 */
export type WitnessOrdering =
  { kind: 'taken-order' } | { kind: 'trusted-after'; afterMs: number } | { kind: 'watermark' };

/** Which known-accepted sends may witness an attempt, on Postgres's clock (the witness query's bounds). */
export interface WitnessBounds {
  /** The witness's request left at or after this: the attempt's end (dispatch + its send timeout). */
  dispatchedFrom: Date;
  /** The witness's request had ended (dispatch + its send timeout) by this; null: no such bound. */
  endedBy: Date | null;
}

/**
 * Pure: the bounds a witness for this attempt must lie in. `now` is Postgres's now() read before any lookup
 * about the witness, so a bound from it holds for the lookup too. The attempt's end uses its own recorded send
 * timeout (migration 0015), else the asking worker's; Postgres's microseconds are lost to a JavaScript Date, so
 * the end is rounded up by a millisecond rather than down.
 */
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

/** Pure: whether a known-accepted send lies within the bounds, so that it may witness the attempt. */
export function witnessQualifies(candidate: WitnessSend, bounds: WitnessBounds): boolean {
  const left = candidate.dispatchedAt.getTime();
  if (left < bounds.dispatchedFrom.getTime()) return false;
  return bounds.endedBy === null || left + candidate.sendTimeoutMs <= bounds.endedBy.getTime();
}

/**
 * Pure: whether the lookup's answer, which lists the witness as `entry`, shows it inside what the answer says
 * is complete. Only a 'watermark' lookup says so; an answer of it without a watermark is taken as in order,
 * and a watermark with an entry that has no acceptance time cannot place the witness below it.
 */
export function shownWithinWatermark(
  ordering: WitnessOrdering,
  answer: Extract<LookupAnswer, { kind: 'entries' }>,
  entry: LookupEntry,
): boolean {
  if (ordering.kind !== 'watermark' || answer.watermark === undefined) return true;
  return entry.acceptedAt !== undefined && entry.acceptedAt.getTime() <= answer.watermark.getTime();
}

export type FreshnessVerdict =
  /** The lookup shows a later send we know it took: our "not found" is fresh, it counts. */
  | { kind: 'fresh'; witness: WitnessSend }
  /**
   * No witness yet: ask again in `waitMs`. `noWitnessFrom` is set when there was no candidate at all: no known
   * accepted send left at or after it (the attempt's end), which is when a witness probe may help.
   */
  | { kind: 'wait'; waitMs: number; reason: string; noWitnessFrom?: Date }
  /** No witness by the deadline: the lookup may be behind, so "not found" proves nothing. */
  | { kind: 'inconclusive'; reason: string };

/** How long the witness is waited for, and how often it is asked. */
export interface FreshnessTiming {
  /**
   * MAIL_VERIFY_DEADLINE_MS, as for a lookup that keeps failing, counted in waits from the first ask (an
   * attempt taken over long after its dispatch still gets its waits): give up once the waits so far add up to it.
   */
  deadlineMs: number;
  /** How long to wait before asking again: the settle delay (a lookup behind by less catches up in it). */
  askAgainAfterMs: number;
  /** How often this attempt was asked about and told to wait already (src/workflows/commands.ts). */
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

/**
 * Pure: what having (or not having) a witness means at `now`. `shown` is the witness the lookup showed, or
 * null when none did (none was there to ask about, or the lookup did not show it).
 */
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

/**
 * Finds a witness candidate, asks the lookup about it (same client, same destination), and judges. A lookup
 * failing for the witness is as good as not showing it: ask again later.
 */
export async function checkFreshness(input: {
  attempt: DispatchedAttempt;
  timing: EvidenceTiming;
  freshness: FreshnessTiming;
  /** Postgres's now(), read before any lookup about the witness. */
  now: Date;
  ordering: WitnessOrdering;
  /** The earliest known-accepted send to the same destination within the bounds (src/db/freshnessWitness.ts). */
  findCandidate(bounds: WitnessBounds): Promise<WitnessSend | null>;
  lookUp(query: LookupQuery): Promise<LookupAnswer>;
}): Promise<FreshnessVerdict> {
  const bounds = witnessBounds(input);
  const found = await input.findCandidate(bounds);
  // The query applies the bounds; checked here again so that the rule holds whatever a query returns.
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

/**
 * Whether a list the lookup answered could not decide only for now: it was not complete, or it held entries its
 * filter should have left out. A provider that pages or filters wrongly once may answer rightly when asked
 * again, so such an answer is asked again like a missing witness, until the same deadline.
 */
export function answerMayDecideLater(answer: LookupAnswer, attempt: DispatchedAttempt): boolean {
  if (answer.kind !== 'entries') return false;
  if (!answer.complete) return true;
  return answer.entries.some((entry) =>
    answer.filteredBy === 'send' ? !entryIsOurs(entry, attempt) : entry.orderId !== attempt.orderId,
  );
}

/** Ask again later, or (past the witness's deadline) give up: for an answer that may decide later. */
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
