// The freshness witness's pure rule (src/evidence/freshnessCheck.ts): "not found" counts only with a witness the
// lookup shows; without one it is asked again a settle delay later, and past the deadline it is inconclusive.
// And which answers may decide later (incomplete, or holding strangers) rather than being inconclusive at once.
import { describe, expect, it } from 'vitest';
import type { DispatchedAttempt, EvidenceTiming } from '../../src/evidence/evidenceRules';
import { answerMayDecideLater, judgeFreshness, type WitnessSend } from '../../src/evidence/freshnessCheck';

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
  dispatchedAt: new Date(dispatchedAt.getTime() + 500),
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
    // Asked first long after the dispatch (a closed run's attempt taken over late): still one wait at least.
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
