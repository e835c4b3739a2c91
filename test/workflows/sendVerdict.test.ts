// The workflow's pure decisions (DESIGN.md §5): what a send failure means and what gets recorded for it.
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  RetryState,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FailureType, sendFailure, type SendFailureDetails } from '../../src/shared/failures';
import { delayBeforeNextAttempt } from '../../src/shared/workflowSettings';
import {
  idempotentRetryConceivable,
  recordDecisionFor,
  verdictOfSendFailure,
  withinIdempotencyWindow,
} from '../../src/workflows/sendVerdict';

function activityFailure(cause: Error): ActivityFailure {
  return new ActivityFailure(
    'Activity task failed',
    'sendOrderMail',
    '3',
    RetryState.MAXIMUM_ATTEMPTS_REACHED,
    'worker',
    cause,
  );
}

describe('verdictOfSendFailure', () => {
  it('reads the typed details of the send’s own failures', () => {
    const failure = sendFailure({
      outcome: 'not_sent',
      httpStatus: 429,
      errorCode: null,
      reason: 'HTTP 429',
      retryAfterMs: 2_000,
    });
    const verdict = verdictOfSendFailure(activityFailure(failure));
    expect(verdict).toMatchObject({
      kind: 'not-accepted',
      failureType: FailureType.MailNotSent,
      details: { outcome: 'not_sent', httpStatus: 429, retryAfterMs: 2_000, retryable: true },
    });
  });

  it('treats a start-to-close timeout (the worker died mid-send) as unknown', () => {
    const verdict = verdictOfSendFailure(
      activityFailure(new TimeoutFailure(undefined, undefined, 'START_TO_CLOSE')),
    );
    expect(verdict).toMatchObject({
      kind: 'not-accepted',
      details: { outcome: 'unknown', errorCode: 'TIMEOUT_START_TO_CLOSE' },
    });
  });

  it('treats a cancellation or an unexpected error as unknown', () => {
    for (const cause of [
      new CancelledFailure('WORKER_SHUTDOWN'),
      ApplicationFailure.create({ type: 'TypeError', message: 'boom' }),
    ]) {
      expect(verdictOfSendFailure(activityFailure(cause))).toMatchObject({ details: { outcome: 'unknown' } });
    }
  });

  it('treats a send failure whose details are missing as unknown, not as rejected', () => {
    const bare = ApplicationFailure.create({ type: FailureType.MailRejected, message: 'no details' });
    expect(verdictOfSendFailure(activityFailure(bare))).toMatchObject({ details: { outcome: 'unknown' } });
  });

  it('recognises a lost claim, with the row as the send found it when the failure carries it', () => {
    const bare = ApplicationFailure.create({ type: FailureType.ClaimLost, message: 'lost' });
    expect(verdictOfSendFailure(activityFailure(bare))).toEqual({
      kind: 'claim-lost',
      row: { currentState: null, currentOutcome: null },
    });
    const withRow = ApplicationFailure.create({
      type: FailureType.ClaimLost,
      message: 'lost',
      details: [{ currentState: 'failed', currentOutcome: 'resolved' }],
    });
    expect(verdictOfSendFailure(activityFailure(withRow))).toEqual({
      kind: 'claim-lost',
      row: { currentState: 'failed', currentOutcome: 'resolved' },
    });
  });
});

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

describe('delayBeforeNextAttempt', () => {
  const settings = { retryInitialIntervalMs: 1_000, retryMaxIntervalMs: 5_000 };
  it('doubles from the initial interval up to the maximum', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => delayBeforeNextAttempt(settings, attempt, null))).toEqual([
      1_000, 2_000, 4_000, 5_000, 5_000,
    ]);
  });
  it('never waits less than Retry-After', () => {
    expect(delayBeforeNextAttempt(settings, 1, 30_000)).toBe(30_000);
    expect(delayBeforeNextAttempt(settings, 3, 10)).toBe(4_000);
  });
});
