// The workflow's pure decisions about an unknown outcome and the idempotency window, as a table.

import { describe, expect, it } from 'vitest';
import type { SendFailureDetails } from '../../src/shared/failures';
import {
  idempotentRetryConceivable,
  recordDecisionFor,
  withinIdempotencyWindow,
} from '../../src/workflows/sendVerdict';

const HOUR = 60 * 60 * 1000;
const RESEND = { windowMs: 24 * HOUR, safetyMarginMs: HOUR };

function details(outcome: SendFailureDetails['outcome']): SendFailureDetails {
  return { outcome, httpStatus: null, errorCode: null, reason: 'r', retryAfterMs: null, retryable: true };
}

describe('recordDecisionFor', () => {
  it.each([
    ['unknown', 'assume-sent', false, { state: 'sent', outcome: 'unknown', unknownPolicy: 'assume-sent' }],
    [
      'unknown',
      'assume-failed',
      false,
      { state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
    ],
    [
      'unknown',
      'assume-sent',
      true,
      { state: 'failed', outcome: 'unknown', unknownPolicy: 'idempotent-retry' },
    ],
    [
      'unknown',
      'assume-failed',
      true,
      { state: 'failed', outcome: 'unknown', unknownPolicy: 'idempotent-retry' },
    ],
    // A retry under the key only ever concerns an unknown outcome.
    ['not_sent', 'assume-sent', true, { state: 'failed', outcome: 'not_sent', unknownPolicy: null }],
    ['rejected', 'assume-sent', true, { state: 'failed', outcome: 'rejected', unknownPolicy: null }],
  ] as const)('%s under %s, retry under key %s', (outcome, policy, retry, expected) => {
    expect(recordDecisionFor(details(outcome), policy, retry)).toEqual(expected);
  });
});

describe('idempotentRetryConceivable', () => {
  it('needs an unknown outcome, idempotency settings and an attempt left', () => {
    expect(idempotentRetryConceivable(details('unknown'), RESEND, 1, 8)).toBe(true);
    expect(idempotentRetryConceivable(details('unknown'), RESEND, 8, 8)).toBe(false);
    expect(idempotentRetryConceivable(details('unknown'), null, 1, 8)).toBe(false);
    // Settings from a history recorded before idempotency existed have no such field.
    expect(idempotentRetryConceivable(details('unknown'), undefined, 1, 8)).toBe(false);
    expect(idempotentRetryConceivable(details('not_sent'), RESEND, 1, 8)).toBe(false);
  });
});

describe('withinIdempotencyWindow', () => {
  const at = (sinceFirstDispatchMs: number | null, delayMs = 10_000, sendTimeoutMs = 60_000) =>
    withinIdempotencyWindow({ idempotency: RESEND, sinceFirstDispatchMs, delayMs, sendTimeoutMs });

  it.each([
    [0, true],
    [HOUR, true],
    // 23 h minus what the backoff and the send itself may take: the last moment a retry is still safe.
    [23 * HOUR - 70_001, true],
    [23 * HOUR - 70_000, false],
    [23 * HOUR, false],
    [25 * HOUR, false],
  ])('%i ms after the first dispatch: %s', (since, expected) => {
    expect(at(since)).toBe(expected);
  });

  it('counts the backoff before the retry and the send timeout', () => {
    expect(at(22 * HOUR, 0, 0)).toBe(true);
    expect(at(22 * HOUR, HOUR, 0)).toBe(false);
    expect(at(22 * HOUR, 0, HOUR)).toBe(false);
  });

  it('nothing ever dispatched: no retry under a key that was never used (the record says not sent)', () => {
    expect(at(null)).toBe(false);
  });
});
