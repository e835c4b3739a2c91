// The freshness witness's pure rule (src/evidence/freshnessCheck.ts): "not found" counts only with a witness the
// lookup shows; without one it is asked again a settle delay later, and past the deadline it is inconclusive.
// A witness is a send whose request left after the attempt's request had ended (dispatch + its send timeout);
// on Mailgun it must also have ended a settle delay before the lookup; on a lookup with a watermark, lie at or
// before it. And which answers may decide later (incomplete, or holding strangers) rather than being
// inconclusive at once.
import { describe, expect, it } from 'vitest';
import type { DispatchedAttempt, EvidenceTiming } from '../../src/evidence/evidenceRules';
import type { LookupAnswer, LookupQuery } from '../../src/evidence/lookupAnswer';
import {
  answerMayDecideLater,
  checkFreshness,
  judgeFreshness,
  witnessBounds,
  witnessQualifies,
  type WitnessOrdering,
  type WitnessSend,
} from '../../src/evidence/freshnessCheck';

const destination = {
  provider: 'generic',
  origin: 'http://127.0.0.1:1',
  scope: null,
  credentialFingerprint: null,
};
const dispatchedAt = new Date('2026-12-02T10:00:00.000Z');
const attempt: DispatchedAttempt = {
  orderId: '7',
  attempt: 1,
  sendKey: 'order-confirmation/default/7/0',
  destination,
  dispatchedAt,
  sendTimeoutMs: 1_000,
  keyFirstDispatchedAt: dispatchedAt,
};
const timing: EvidenceTiming = { settleDelayMs: 30_000, retentionMs: null, fallbackSendTimeoutMs: 1_000 };
const freshness = { deadlineMs: 300_000, askAgainAfterMs: 30_000, waitsSoFar: 0 };
const witness: WitnessSend = {
  orderId: '8',
  sendKey: 'order-confirmation/default/8/0',
  destination,
  dispatchedAt: new Date(dispatchedAt.getTime() + 1_500),
  sendTimeoutMs: 1_000,
};
// "Not found" could first count at dispatch + 1 s (send timeout) + 30 s (settle delay).
const countsFrom = dispatchedAt.getTime() + 31_000;
const at = (ms: number) => new Date(countsFrom + ms);

describe('judgeFreshness', () => {
  it('a witness the lookup shows makes "not found" fresh', () => {
    expect(
      judgeFreshness({ attempt, timing, freshness, now: at(0), candidate: witness, shown: true }),
    ).toEqual({
      kind: 'fresh',
      witness,
    });
  });

  it('no witness, or one the lookup does not show yet: ask again a settle delay later, with the reason', () => {
    const none = judgeFreshness({ attempt, timing, freshness, now: at(0), candidate: null, shown: false });
    expect(none).toMatchObject({ kind: 'wait', waitMs: 30_000 });
    expect(none.kind === 'wait' && none.reason).toMatch(/no send we know was accepted/);
    const hidden = judgeFreshness({
      attempt,
      timing,
      freshness,
      now: at(0),
      candidate: witness,
      shown: false,
    });
    expect(hidden.kind === 'wait' && hidden.reason).toMatch(/does not show yet order 8's send/);
  });

  it('gives up once the waits add up to the deadline, and always waits at least once', () => {
    const after = (waitsSoFar: number, now = at(0)) =>
      judgeFreshness({
        attempt,
        timing,
        freshness: { ...freshness, waitsSoFar },
        now,
        candidate: null,
        shown: false,
      });
    expect(after(9)).toMatchObject({ kind: 'wait', waitMs: 30_000 });
    expect(after(10).kind).toBe('inconclusive');
    // Asked first long after the dispatch (an orphan taken over late): still one wait at least.
    expect(after(0, at(3_600_000))).toMatchObject({ kind: 'wait' });
    expect(
      judgeFreshness({
        attempt,
        timing,
        freshness: { ...freshness, deadlineMs: 1_000, waitsSoFar: 1 },
        now: at(0),
        candidate: null,
        shown: false,
      }).kind,
    ).toBe('inconclusive');
  });
});

describe('answerMayDecideLater', () => {
  it('an incomplete list, or one with entries the filter should have left out, may decide later', () => {
    const base = { kind: 'entries', complete: true } as const;
    expect(answerMayDecideLater({ ...base, filteredBy: 'order', entries: [] }, attempt)).toBe(false);
    expect(
      answerMayDecideLater({ ...base, complete: false, filteredBy: 'order', entries: [] }, attempt),
    ).toBe(true);
    expect(
      answerMayDecideLater(
        { ...base, filteredBy: 'order', entries: [{ orderId: '9', sendKey: 'x' }] },
        attempt,
      ),
    ).toBe(true);
    // Another send of the same order under an order filter: the filter held.
    expect(
      answerMayDecideLater(
        {
          ...base,
          filteredBy: 'order',
          entries: [{ orderId: '7', sendKey: 'order-confirmation/default/7/1' }],
        },
        attempt,
      ),
    ).toBe(false);
    expect(
      answerMayDecideLater(
        { ...base, filteredBy: 'send', entries: [{ sendKey: 'order-confirmation/lie-staging/7/0' }] },
        attempt,
      ),
    ).toBe(true);
    expect(answerMayDecideLater({ kind: 'unanswerable', reason: 'no access' }, attempt)).toBe(false);
  });
});

const IN_ORDER: WitnessOrdering = { kind: 'taken-order' };
const MAILGUN: WitnessOrdering = { kind: 'trusted-after', afterMs: 30 * 60_000 };
const WATERMARK: WitnessOrdering = { kind: 'watermark' };
/** A known-accepted send of order 8 whose request left `ms` after the attempt's dispatch. */
const sentAt = (ms: number, sendTimeoutMs = 1_000): WitnessSend => ({
  ...witness,
  dispatchedAt: new Date(dispatchedAt.getTime() + ms),
  sendTimeoutMs,
});

describe('which sends may witness an attempt (witnessBounds, witnessQualifies)', () => {
  // The attempt's request left at 0 and, by its recorded send timeout (1 s), had ended by 1 s.
  const qualifies = (candidate: WitnessSend, ordering: WitnessOrdering = IN_ORDER, now = at(0)) =>
    witnessQualifies(candidate, witnessBounds({ attempt, timing, ordering, now }));

  it.each([
    ['left while the attempt was on the wire', 500, false],
    ['left the very millisecond the attempt ended', 1_000, false],
    ['left after the attempt ended', 1_001, true],
    ['left long after', 600_000, true],
    ['left before the attempt', -500, false],
  ])('a send that %s: %s', (_what, ms, counts) => {
    expect(qualifies(sentAt(ms))).toBe(counts);
  });

  it("the attempt's own recorded send timeout sets its end; the worker's only where none was recorded", () => {
    const long = { ...attempt, sendTimeoutMs: 60_000 };
    expect(
      witnessQualifies(
        sentAt(30_000),
        witnessBounds({ attempt: long, timing, ordering: IN_ORDER, now: at(0) }),
      ),
    ).toBe(false);
    expect(
      witnessQualifies(
        sentAt(60_001),
        witnessBounds({ attempt: long, timing, ordering: IN_ORDER, now: at(0) }),
      ),
    ).toBe(true);
    const unrecorded = { ...attempt, sendTimeoutMs: null };
    const bounds = witnessBounds({
      attempt: unrecorded,
      timing: { ...timing, fallbackSendTimeoutMs: 20_000 },
      ordering: IN_ORDER,
      now: at(0),
    });
    expect(witnessQualifies(sentAt(10_000), bounds)).toBe(false);
    expect(witnessQualifies(sentAt(20_001), bounds)).toBe(true);
  });

  it('Mailgun: a witness counts only once it ended at least the threshold before the lookup', () => {
    // Left at 2 s, ended by 3 s (its own 1 s timeout); the threshold is 30 min.
    const candidate = sentAt(2_000);
    const ended = dispatchedAt.getTime() + 3_000;
    const lookupAt = (ms: number) => new Date(ended + ms);
    expect(qualifies(candidate, MAILGUN, lookupAt(30 * 60_000 - 1))).toBe(false);
    expect(qualifies(candidate, MAILGUN, lookupAt(5 * 60_000))).toBe(false);
    expect(qualifies(candidate, MAILGUN, lookupAt(30 * 60_000))).toBe(true);
    // Old enough, but it left while the attempt was on the wire: still no witness.
    expect(qualifies(sentAt(500), MAILGUN, lookupAt(3_600_000))).toBe(false);
    // The witness's own send timeout counts towards when it ended: its 2xx may have come that late.
    expect(qualifies(sentAt(2_000, 120_000), MAILGUN, lookupAt(30 * 60_000))).toBe(false);
  });
});

describe('checkFreshness applies the witness rule', () => {
  const answerShowing = (shown: WitnessSend[], watermark?: Date): LookupAnswer => ({
    kind: 'entries',
    filteredBy: 'order',
    complete: true,
    ...(watermark === undefined ? {} : { watermark }),
    entries: shown.map((send) => ({
      orderId: send.orderId,
      sendKey: send.sendKey,
      acceptedAt: new Date(send.dispatchedAt.getTime() + 100),
    })),
  });
  const check = (input: {
    candidate: WitnessSend;
    ordering?: WitnessOrdering;
    now?: Date;
    watermark?: Date;
  }) =>
    checkFreshness({
      attempt,
      timing,
      freshness,
      now: input.now ?? at(0),
      ordering: input.ordering ?? IN_ORDER,
      // A query that returns the candidate whatever the bounds: the rule must hold anyway.
      findCandidate: () => Promise.resolve(input.candidate),
      lookUp: (query: LookupQuery) =>
        Promise.resolve(
          answerShowing(query.orderId === input.candidate.orderId ? [input.candidate] : [], input.watermark),
        ),
    });

  it('a send accepted while the attempt was still on the wire, shown by the lookup, is no witness', async () => {
    expect(await check({ candidate: sentAt(500) })).toMatchObject({ kind: 'wait' });
  });

  it('a send dispatched after the attempt ended, shown by the lookup, is', async () => {
    expect(await check({ candidate: sentAt(1_500) })).toMatchObject({ kind: 'fresh' });
  });

  it('Mailgun: a witness inside the threshold does not count; past it, it does', async () => {
    const candidate = sentAt(1_500);
    const ended = candidate.dispatchedAt.getTime() + candidate.sendTimeoutMs;
    expect(await check({ candidate, ordering: MAILGUN, now: new Date(ended + 10 * 60_000) })).toMatchObject({
      kind: 'wait',
    });
    expect(await check({ candidate, ordering: MAILGUN, now: new Date(ended + 30 * 60_000) })).toMatchObject({
      kind: 'fresh',
    });
  });

  it("a watermark lookup: a witness counts only at or before the answer's watermark; without one, as before", async () => {
    const candidate = sentAt(1_500);
    // The entry says it was accepted 100 ms after its dispatch.
    const acceptedAt = candidate.dispatchedAt.getTime() + 100;
    expect(
      await check({ candidate, ordering: WATERMARK, watermark: new Date(acceptedAt - 1) }),
    ).toMatchObject({ kind: 'wait' });
    expect(await check({ candidate, ordering: WATERMARK, watermark: new Date(acceptedAt) })).toMatchObject({
      kind: 'fresh',
    });
    expect(await check({ candidate, ordering: WATERMARK })).toMatchObject({ kind: 'fresh' });
  });
});
