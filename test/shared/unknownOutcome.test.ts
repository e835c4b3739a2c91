// The one decision about a possibly-accepted request (src/shared/unknownOutcome.ts), as a table.
import { describe, expect, it } from 'vitest';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  withinIdempotencyWindow,
  type UnknownOutcomeDecision,
  type UnknownOutcomeFacts,
  type VerificationAnswer,
} from '../../src/shared/unknownOutcome';

const HOUR = 60 * 60 * 1000;
const RESEND = { windowMs: 24 * HOUR, safetyMarginMs: HOUR };

function facts(overrides: Partial<UnknownOutcomeFacts> = {}): UnknownOutcomeFacts {
  return {
    dispatched: true,
    policy: 'assume-sent',
    idempotency: null,
    sinceKeyFirstDispatchMs: 1_000,
    delayBeforeRetryMs: 200,
    sendTimeoutMs: 60_000,
    anotherAttemptFollows: true,
    providerError: null,
    ...overrides,
  };
}

describe('decideUnknownOutcome', () => {
  it.each([
    ['assume-sent', { kind: 'policy', state: 'sent', outcome: 'unknown', unknownPolicy: 'assume-sent' }],
    [
      'assume-failed',
      { kind: 'policy', state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
    ],
  ] as const)('without idempotency keys, %s settles it', (policy, expected) => {
    expect(decideUnknownOutcome(facts({ policy }))).toEqual(expected);
  });

  it('an attempt that never passed the dispatch fence made no request: not sent, whatever the policy', () => {
    for (const policy of ['assume-sent', 'assume-failed'] as const) {
      expect(decideUnknownOutcome(facts({ policy, dispatched: false, idempotency: RESEND }))).toEqual({
        kind: 'not-sent',
        state: 'failed',
        outcome: 'not_sent',
        unknownPolicy: null,
      });
    }
  });

  it('inside the key window with an attempt to follow: a retry under the key, under either policy', () => {
    for (const policy of ['assume-sent', 'assume-failed'] as const) {
      expect(decideUnknownOutcome(facts({ policy, idempotency: RESEND }))).toEqual({
        kind: 'retry-under-key',
        state: 'failed',
        outcome: 'unknown',
        unknownPolicy: 'idempotent-retry',
      });
    }
  });

  it('no attempt follows (the last one, a cancel, a closed run): the policy', () => {
    expect(decideUnknownOutcome(facts({ idempotency: RESEND, anotherAttemptFollows: false }))).toMatchObject({
      kind: 'policy',
      unknownPolicy: 'assume-sent',
    });
  });

  it('outside the key window: the policy, not a retry the provider would take as new', () => {
    expect(
      decideUnknownOutcome(facts({ idempotency: RESEND, sinceKeyFirstDispatchMs: 23 * HOUR })),
    ).toMatchObject({ kind: 'policy' });
  });

  it('the key was already used with another body (409 invalid_idempotent_request): the policy, never a retry', () => {
    expect(
      decideUnknownOutcome(facts({ idempotency: RESEND, providerError: 'invalid_idempotent_request' })),
    ).toMatchObject({ kind: 'policy', unknownPolicy: 'assume-sent' });
    // Still in progress (concurrent_idempotent_requests) is worth retrying under the key.
    expect(
      decideUnknownOutcome(facts({ idempotency: RESEND, providerError: 'concurrent_idempotent_requests' })),
    ).toMatchObject({ kind: 'retry-under-key' });
  });
});

describe('withinIdempotencyWindow', () => {
  const at = (sinceKeyFirstDispatchMs: number | null, delayBeforeRetryMs = 10_000, sendTimeoutMs = 60_000) =>
    withinIdempotencyWindow(RESEND, { sinceKeyFirstDispatchMs, delayBeforeRetryMs, sendTimeoutMs });

  it.each([
    [0, true],
    [HOUR, true],
    // 23 h minus what the backoff and the send itself may take: the last moment a retry is still safe.
    [23 * HOUR - 70_001, true],
    [23 * HOUR - 70_000, false],
    [23 * HOUR, false],
    [25 * HOUR, false],
  ])('%i ms after the key was first sent: %s', (since, expected) => {
    expect(at(since)).toBe(expected);
  });

  it('counts the backoff before the retry and the send timeout', () => {
    expect(at(22 * HOUR, 0, 0)).toBe(true);
    expect(at(22 * HOUR, HOUR, 0)).toBe(false);
    expect(at(22 * HOUR, 0, HOUR)).toBe(false);
  });

  it('a key never sent: no window to rely on', () => {
    expect(at(null)).toBe(false);
  });
});

describe('decideUnknownOutcome with verification (the provider can be asked)', () => {
  const verifying = (answer: VerificationAnswer | null, overrides: Partial<UnknownOutcomeFacts> = {}) =>
    facts({ verification: { answer }, ...overrides });

  it('first: wait the settle delay and ask, under either policy', () => {
    for (const policy of ['assume-sent', 'assume-failed'] as const) {
      expect(decideUnknownOutcome(verifying(null, { policy }))).toEqual({ kind: 'verify' });
    }
  });

  it('found: sent, accepted, with the provider’s id and how it was verified', () => {
    for (const via of ['lookup', 'webhook'] as const) {
      expect(
        decideUnknownOutcome(
          verifying({ kind: 'found', via, providerMessageId: 'pm-1' }, { policy: 'assume-failed' }),
        ),
      ).toEqual({
        kind: 'verified-accepted',
        state: 'sent',
        outcome: 'accepted',
        unknownPolicy: null,
        verification: via,
        providerMessageId: 'pm-1',
      });
    }
  });

  it('not found after the settle delay: not sent, for the normal not-sent path to retry', () => {
    expect(
      decideUnknownOutcome(
        verifying({ kind: 'not-found', via: 'lookup', sinceDispatchMs: 31_000 }, { policy: 'assume-sent' }),
      ),
    ).toEqual({
      kind: 'verified-not-sent',
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
      verification: 'lookup',
    });
  });

  it('inconclusive: the policy as without verification, and the row says it was tried', () => {
    const answer = {
      kind: 'inconclusive',
      reason: 'the lookup did not succeed within its deadline of 5 s',
    } as const;
    expect(decideUnknownOutcome(verifying(answer, { policy: 'assume-sent' }))).toEqual({
      kind: 'policy',
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
      verification: 'inconclusive',
    });
    const decision = decideUnknownOutcome(verifying(answer, { policy: 'assume-failed' }));
    expect(decision).toMatchObject({ kind: 'policy', state: 'failed', verification: 'inconclusive' });
    expect(describeUnknownDecision(decision as UnknownOutcomeDecision, verifying(answer))).toBe(
      'outcome unknown, settled by policy assume-failed because verification could not decide: the lookup did ' +
        'not succeed within its deadline of 5 s',
    );
  });

  it('never asks about an attempt that made no request, and a retry under the key goes first', () => {
    expect(decideUnknownOutcome(verifying(null, { dispatched: false }))).toMatchObject({ kind: 'not-sent' });
    expect(decideUnknownOutcome(verifying(null, { idempotency: RESEND }))).toMatchObject({
      kind: 'retry-under-key',
    });
  });

  it('without verification (the claim, the sweep, MAIL_VERIFY off) nothing changes: the policy', () => {
    expect(decideUnknownOutcome(facts())).toEqual({
      kind: 'policy',
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
    });
  });
});
