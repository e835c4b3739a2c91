// The workflow's reading of a send failure (docs/design.md §5), and its backoff. What an unknown outcome becomes:
// test/shared/unknownOutcome.test.ts.
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  RetryState,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FailureType, sendFailure } from '../../src/shared/failures';
import { delayBeforeNextAttempt } from '../../src/shared/workflowSettings';
import { verdictOfSendFailure } from '../../src/workflows/sendVerdict';

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

  it('recognises a lost claim, with the row as the send found it', () => {
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
