// One send's outcome (src/shared/sendOutcome.ts, docs/design.md §5) as the workflow reads it back from the send
// activity's failure, and the backoff. What an unknown outcome becomes: test/shared/unknownOutcome.test.ts.
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  RetryState,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FailureType } from '../../src/shared/failures';
import {
  claimLostFailure,
  notAcceptedOutcome,
  recordOfAnswer,
  sendFailure,
  sendOutcomeOfFailure,
} from '../../src/shared/sendOutcome';
import {
  afterAttempt,
  delayBeforeNextAttempt,
  msUntilNotFoundCounts,
} from '../../src/shared/workflowSettings';

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

describe('sendOutcomeOfFailure', () => {
  it('reads the typed details of the send’s own failures', () => {
    const failure = sendFailure(
      notAcceptedOutcome({
        outcome: 'not_sent',
        httpStatus: 429,
        errorCode: null,
        reason: 'HTTP 429',
        retryAfterMs: 2_000,
      }),
    );
    const sent = sendOutcomeOfFailure(activityFailure(failure));
    expect(sent).toMatchObject({
      failureType: FailureType.MailNotSent,
      outcome: 'not_sent',
      httpStatus: 429,
      retryAfterMs: 2_000,
      retryable: true,
    });
  });

  it('reads back exactly the outcome the send activity carried in its failure', () => {
    const carried = notAcceptedOutcome(
      { outcome: 'unknown', httpStatus: 502, errorCode: null, reason: 'HTTP 502' },
      1_234,
    );
    expect(sendOutcomeOfFailure(activityFailure(sendFailure(carried)))).toEqual(carried);
  });

  it('treats a start-to-close timeout (the worker died mid-send) as unknown', () => {
    const sent = sendOutcomeOfFailure(
      activityFailure(new TimeoutFailure(undefined, undefined, 'START_TO_CLOSE')),
    );
    expect(sent).toMatchObject({
      failureType: FailureType.MailOutcomeUnknown,
      outcome: 'unknown',
      errorCode: 'TIMEOUT_START_TO_CLOSE',
    });
  });

  it('treats a cancellation or an unexpected error as unknown', () => {
    for (const cause of [
      new CancelledFailure('WORKER_SHUTDOWN'),
      ApplicationFailure.create({ type: 'TypeError', message: 'boom' }),
    ]) {
      expect(sendOutcomeOfFailure(activityFailure(cause))).toMatchObject({ outcome: 'unknown' });
    }
  });

  it('treats a send failure whose details are missing as unknown, not as rejected', () => {
    const bare = ApplicationFailure.create({ type: FailureType.MailRejected, message: 'no details' });
    expect(sendOutcomeOfFailure(activityFailure(bare))).toMatchObject({ outcome: 'unknown' });
  });

  it('recognises a lost claim, with the row as the send found it', () => {
    const withRow = claimLostFailure('1', { currentState: 'failed', currentOutcome: 'resolved' });
    expect(withRow.type).toBe(FailureType.ClaimLost);
    expect(sendOutcomeOfFailure(activityFailure(withRow))).toEqual({
      outcome: 'claim-lost',
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

describe('afterAttempt: what follows an attempt that was not accepted', () => {
  const settings = { maxSendAttempts: 3, retryInitialIntervalMs: 1_000, retryMaxIntervalMs: 5_000 };
  const notSent = { outcome: 'not_sent', retryable: true, retryAfterMs: null } as const;
  it('another attempt after the backoff while the run has attempts left, then none', () => {
    expect(afterAttempt(settings, 1, notSent)).toEqual({ kind: 'retry', delayMs: 1_000 });
    expect(afterAttempt(settings, 2, { ...notSent, retryAfterMs: 30_000 })).toEqual({
      kind: 'retry',
      delayMs: 30_000,
    });
    expect(afterAttempt(settings, 3, notSent)).toEqual({ kind: 'gave-up' });
  });
  it('none after a rejection or an answer that is not retryable, attempts left or not', () => {
    expect(afterAttempt(settings, 1, { ...notSent, outcome: 'rejected' })).toEqual({ kind: 'permanent' });
    expect(afterAttempt(settings, 1, { ...notSent, retryable: false })).toEqual({ kind: 'permanent' });
    expect(afterAttempt(settings, 3, { ...notSent, outcome: 'rejected' })).toEqual({ kind: 'permanent' });
  });
});

describe("recordOfAnswer: what the provider's own answer is recorded as", () => {
  it('accepted: sent, with the message id', () => {
    expect(recordOfAnswer({ outcome: 'accepted', httpStatus: 202, providerMessageId: 'm-1' })).toEqual({
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      providerMessageId: 'm-1',
      httpStatus: 202,
      error: null,
    });
  });
  it('not accepted: failed, with the reason', () => {
    const rejected = notAcceptedOutcome({
      outcome: 'rejected',
      httpStatus: 422,
      errorCode: null,
      reason: 'bad',
    });
    expect(recordOfAnswer(rejected)).toEqual({
      state: 'failed',
      outcome: 'rejected',
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: 422,
      error: 'bad',
    });
  });
});

describe('msUntilNotFoundCounts', () => {
  it("the request's longest life plus the settle delay after dispatch, never negative", () => {
    expect(msUntilNotFoundCounts(1_000, 10_000, 60_000)).toBe(69_000);
    expect(msUntilNotFoundCounts(70_000, 10_000, 60_000)).toBe(0);
    expect(msUntilNotFoundCounts(69_999, 10_000, 60_000)).toBe(1);
  });
});
