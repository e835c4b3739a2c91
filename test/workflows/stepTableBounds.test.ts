// The step table's rows answer data the loop carries out: each row is told how often the run took it (this time
// included), and its bound counts that. Table test of every bounded row; the workflow-only calls the endings make
// (memo, search attributes, log) are stubbed, the failures are the SDK's own.
import { ApplicationFailure, CancelledFailure } from '@temporalio/workflow';
import { describe, expect, it, vi } from 'vitest';
import { FailureType } from '../../src/shared/failures';
import { notAccepted } from '../../src/shared/sendOutcome';
import { firstHoldRecheckOf, type OrderMailWorkflowSettings } from '../../src/shared/workflowSettings';
import {
  AFTER_STEP,
  ORPHAN_SETTLEMENTS,
  RECLAIMS_AFTER_LOST_CLAIM,
  SAME_TIME_WAITS,
  type OrderMailResult,
} from '../../src/workflows/orderConfirmationMail';

vi.mock('@temporalio/workflow', async (importOriginal) => ({
  ...(await importOriginal<typeof import('@temporalio/workflow')>()),
  log: { info: () => undefined, warn: () => undefined },
  upsertMemo: () => undefined,
  upsertSearchAttributes: () => undefined,
  workflowInfo: () => ({ typedSearchAttributes: { get: () => undefined } }),
}));

type Run = Parameters<(typeof AFTER_STEP)['held']>[1];
const newRun = (orderWaitMs = 60_000, firstHoldRecheckMs = firstHoldRecheckOf(undefined)) =>
  ({
    orderId: 'order-1',
    orderWaitMs,
    orderWaitedMs: 0,
    firstHoldRecheckMs,
    taken: new Map(),
  }) as unknown as Run;
const AGAIN = 'claim-again';
const failureType = (answer: unknown) => (answer instanceof ApplicationFailure ? answer.type : answer);
const waitOf = (answer: unknown) => answer as { ms: number; untilResumed?: true; cancelled(): unknown };

describe('the step table, row by row', () => {
  it('held at the same time: waits 1 s SAME_TIME_WAITS times, then fails ClaimHeldElsewhere', () => {
    const run = newRun();
    const step = { kind: 'held-at-same-time', holder: 'other-run' } as const;
    const answers = [1, 2, 3].map((times) => AFTER_STEP['held-at-same-time'](step, run, times));
    expect(SAME_TIME_WAITS).toBe(2);
    expect(answers.slice(0, 2).map((answer) => waitOf(answer).ms)).toEqual([1_000, 1_000]);
    expect(failureType(answers[2])).toBe(FailureType.ClaimHeldElsewhere);
  });

  it('lost while held: claims again RECLAIMS_AFTER_LOST_CLAIM times, then ends with its result', () => {
    const result: OrderMailResult = {
      orderId: 'order-1',
      result: 'claim-lost',
      outcome: null,
      attempts: 2,
      providerMessageId: null,
    };
    const step = { kind: 'lost-while-held', result } as const;
    const answers = [1, 2, 3, 4].map((times) => AFTER_STEP['lost-while-held'](step, newRun(), times));
    expect(RECLAIMS_AFTER_LOST_CLAIM).toBe(3);
    expect(answers).toEqual([AGAIN, AGAIN, AGAIN, result]);
  });

  it('orphan settled: claims again ORPHAN_SETTLEMENTS times in a row, then fails ClaimHeldElsewhere', () => {
    const step = { kind: 'orphan-settled', attempt: 1, settledAs: 'failed' } as const;
    const answers = [1, 2, 3, 4].map((times) => AFTER_STEP['orphan-settled'](step, newRun(), times));
    expect(ORPHAN_SETTLEMENTS).toBe(3);
    expect(answers.slice(0, 3)).toEqual([AGAIN, AGAIN, AGAIN]);
    expect(failureType(answers[3])).toBe(FailureType.ClaimHeldElsewhere);
  });

  it('held: waits for the resume signal, its fallback timer 1, 2, 4, 8, then every 15 minutes', () => {
    const step = { kind: 'held', attempt: 1 } as const;
    const waits = [1, 2, 3, 4, 5, 6].map((times) => waitOf(AFTER_STEP.held(step, newRun(), times)));
    expect(waits.map((wait) => wait.ms / 60_000)).toEqual([1, 2, 4, 8, 15, 15]);
    expect(waits.every((wait) => wait.untilResumed === true)).toBe(true);
  });

  it('held, a start asking a shorter first timer: still waits for the resume signal, the timer doubling from it', () => {
    const step = { kind: 'held', attempt: 1 } as const;
    const run = newRun(60_000, firstHoldRecheckOf({ firstHoldRecheckMs: 5_000 }));
    const waits = [1, 2, 3, 4, 5, 9, 10, 11].map((times) => waitOf(AFTER_STEP.held(step, run, times)));
    expect(waits.map((wait) => wait.ms / 1_000)).toEqual([5, 10, 20, 40, 80, 900, 900, 900]);
    expect(waits.every((wait) => wait.untilResumed === true)).toBe(true);
  });

  it('held: a first timer that is no positive number of milliseconds is the minute the order service gets', () => {
    const asked = [undefined, {}, { firstHoldRecheckMs: 0 }, { firstHoldRecheckMs: -1 }];
    const more = [{ firstHoldRecheckMs: Number.NaN }, { firstHoldRecheckMs: Number.POSITIVE_INFINITY }];
    expect([...asked, ...more].map((options) => firstHoldRecheckOf(options))).toEqual(Array(6).fill(60_000));
  });

  it('order not visible: waits 0.5 s doubling while the timers slept stay under the bound, then fails', () => {
    const run = newRun(1_200);
    const failure = ApplicationFailure.create({ type: FailureType.OrderNotFound, nonRetryable: true });
    const step = { kind: 'order-not-visible', failure } as const;
    const answers = [1, 2, 3].map((times) => AFTER_STEP['order-not-visible'](step, run, times));
    expect(answers.slice(0, 2).map((answer) => waitOf(answer).ms)).toEqual([500, 1_000]);
    expect(failureType(answers[2])).toBe(FailureType.OrderNotFound);
  });

  it('not accepted: waits its backoff until the run has made maxSendAttempts attempts, then gives up', () => {
    const settings = { maxSendAttempts: 2, retryInitialIntervalMs: 1_000, retryMaxIntervalMs: 8_000 };
    const sent = notAccepted('not_sent', null, 'refused for now');
    const step = {
      kind: 'not-accepted',
      attempt: 5,
      settings: settings as OrderMailWorkflowSettings,
      sent,
      recordedOutcome: 'not_sent',
    } as const;
    const answers = [1, 2].map((times) => AFTER_STEP['not-accepted'](step, newRun(), times));
    expect(waitOf(answers[0]).ms).toBe(1_000);
    expect(failureType(answers[1])).toBe(FailureType.MailNotSentGaveUp);
  });

  it('a cancel during a wait ends the run Cancelled', () => {
    const wait = waitOf(AFTER_STEP.held({ kind: 'held', attempt: 1 }, newRun(), 1));
    expect(wait.cancelled()).toBeInstanceOf(CancelledFailure);
  });
});
