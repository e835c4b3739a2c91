// THE FRESHNESS WITNESS (docs/providers.md, "A lookup that is behind"): a lookup's "not found" for an attempt
// counts only when the same lookup, asked the same way (the same destination), already shows a send we KNOW
// was accepted (it got its 2xx) and that was dispatched at or after this attempt. A provider's log that shows a
// later send has caught up past our attempt's dispatch, so our message, had it been accepted, would be there
// too. Without such a witness, the lookup may simply be behind (slower than its settle delay): ask again
// later, and past a deadline the answer is inconclusive and the policy decides.
//
// The verify activity (src/activities/verifyOrderMail.ts) calls checkFreshness where the evidence rules
// (src/evidence/evidenceRules.ts) concluded "not found"; the witness is asked about with the very lookup client
// and the very rules that judged our attempt.
import type { DispatchedAttempt, EvidenceTiming } from './evidenceRules';
import { entryIsOurs, judgeLookup } from './evidenceRules';
import type { SendDestination } from './destination';
import type { LookupAnswer, LookupQuery } from './lookupAnswer';

/** A send we know was accepted: its attempt got a 2xx, recorded on its log row (src/db/freshnessWitness.ts). */
export interface WitnessSend {
  orderId: string;
  sendKey: string;
  destination: SendDestination;
  dispatchedAt: Date;
}

export type FreshnessVerdict =
  /** The lookup shows a later send we know it took: our "not found" is fresh, it counts. */
  | { kind: 'fresh'; witness: WitnessSend }
  /** No witness yet: ask again in `waitMs`. */
  | { kind: 'wait'; waitMs: number; reason: string }
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
  /** How often this attempt was asked about and told to wait already (src/workflows/askProvider.ts). */
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
      ? 'no send we know was accepted (a 2xx) has been dispatched to the same place since this attempt, so ' +
        'nothing shows that the lookup has caught up with it'
      : `the lookup does not show yet order ${candidate.orderId}'s send, which got its 2xx and was dispatched ` +
        'after this attempt: it is behind, and may not show this attempt yet either';
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
  now: Date;
  /** The earliest known-accepted send to the same destination dispatched at or after the attempt. */
  findCandidate(): Promise<WitnessSend | null>;
  lookUp(query: LookupQuery): Promise<LookupAnswer>;
}): Promise<FreshnessVerdict> {
  const candidate = await input.findCandidate();
  let shown = false;
  if (candidate !== null) {
    const answer = await input.lookUp({
      orderId: candidate.orderId,
      sendKey: candidate.sendKey,
      destination: candidate.destination,
    });
    if (answer.kind !== 'failed') {
      const verdict = judgeLookup({
        attempt: {
          orderId: candidate.orderId,
          attempt: 0,
          sendKey: candidate.sendKey,
          destination: candidate.destination,
          dispatchedAt: candidate.dispatchedAt,
          sendTimeoutMs: null,
          keyFirstDispatchedAt: candidate.dispatchedAt,
        },
        asking: candidate.destination,
        answer,
        now: input.now,
        timing: input.timing,
      });
      shown = verdict.kind === 'found';
    }
  }
  return judgeFreshness({ ...input, candidate, shown });
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
