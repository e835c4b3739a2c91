// The operator-chaos report (dev/demo/report/operatorReport.ts with report.ts and scenarioInvariants.ts):
// which orders an operator asked to re-send, and that each operator invariant catches what it names and lets
// the rest pass.
import { describe, expect, it } from 'vitest';
import type {
  AttemptFact,
  LogRowFact,
  OperatorActRecord,
  RunFact,
  RunFacts,
} from '../../dev/demo/report/facts';
import { actsBehind, resendsAskedFor } from '../../dev/demo/report/operatorReport';
import { buildReport } from '../../dev/demo/report/report';

const T = (second: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, second)).toISOString();

function act(
  name: OperatorActRecord['act'],
  orderId: string,
  second: number,
  extra: Partial<OperatorActRecord> = {},
): OperatorActRecord {
  return { act: name, orderId, runId: 'r1', at: T(second), result: 'done', detail: null, ...extra };
}

const closedRun = (runId: string, from: number, to: number, status = 'COMPLETED'): RunFact => ({
  runId,
  status,
  startedAt: T(from),
  closedAt: T(to),
});

interface OrderStory {
  row?: Omit<LogRowFact, 'orderId'>;
  attempts?: Omit<AttemptFact, 'orderId'>[];
  messages?: string[];
  runs?: RunFact[];
}

function facts(orders: Record<string, OrderStory>, acts: OperatorActRecord[]): RunFacts {
  const entries = Object.entries(orders);
  const runs = Object.fromEntries(
    entries.map(([orderId, story]) => [orderId, story.runs ?? [closedRun('r1', 0, 5)]]),
  );
  return {
    profile: 'chaos',
    transport: 'http',
    policy: 'assume-sent',
    verification: {
      provider: 'generic',
      verifies: false,
      lookups: 0,
      lookupFaults: 0,
      webhookPosts: 0,
      webhookDuplicates: 0,
    },
    orderIds: entries.map(([orderId]) => orderId),
    rows: entries.flatMap(([orderId, story]) => (story.row ? [{ orderId, ...story.row }] : [])),
    attempts: entries.flatMap(([orderId, story]) =>
      (story.attempts ?? []).map((attempt) => ({ orderId, ...attempt })),
    ),
    messages: entries.flatMap(([orderId, story]) =>
      (story.messages ?? []).map((id) => ({ orderId, id, receivedAt: T(1) })),
    ),
    requests: [],
    workflows: Object.fromEntries(entries.map(([orderId]) => [orderId, runs[orderId]![0]!.status])),
    inbox: null,
    chaos: {
      workerKills: 0,
      workerRestarts: 0,
      workerExits: 0,
      postgresRestarts: 0,
      temporalRestarts: 0,
      refusedWindows: 0,
    },
    starts: { clientProcesses: 1, startCalls: 1, started: 1, alreadyStarted: 0, retriedCalls: 0 },
    workers: 1,
    elapsedMs: 1_000,
    operators: {
      acts,
      runs,
      sweeps: {
        scheduleEveryMs: 0,
        scheduledRuns: 0,
        finalRuns: 1,
        settledBySweep: 0,
        sendingRowsLeft: 0,
        lastReport: null,
      },
    },
  };
}

const acceptedAttempt = (attempt: number, id: string): Omit<AttemptFact, 'orderId'> => ({
  attempt,
  state: 'sent',
  outcome: 'accepted',
  unknownPolicy: null,
  dispatched: true,
  providerMessageId: id,
  verification: null,
  finishedAt: T(1),
});

/** Sent, resolved as failed by an operator, then sent again: two messages, both accepted. */
const resent: OrderStory = {
  row: { state: 'sent', outcome: 'accepted', attempts: 2, providerMessageId: 'm2' },
  attempts: [acceptedAttempt(1, 'm1'), acceptedAttempt(2, 'm2')],
  messages: ['m1', 'm2'],
  runs: [closedRun('r2', 8, 9), closedRun('r1', 0, 5, 'TERMINATED')],
};

function failing(report: ReturnType<typeof buildReport>): Record<string, string[]> {
  return Object.fromEntries(
    report.invariants.filter((result) => !result.holds).map((result) => [result.name, result.violations]),
  );
}

describe('resendsAskedFor', () => {
  it('counts a resolve --as failed followed by a retry or a reset, or made while a run was open', () => {
    const runs = { '1': [closedRun('r1', 0, 5)], '2': [closedRun('r1', 0, 5)], '3': [closedRun('r1', 0, 5)] };
    const asked = resendsAskedFor(
      [
        act('ops-resolve-failed', '1', 6),
        act('ops-retry', '1', 7),
        // While its run is open: that run claims the failed row again.
        act('ops-resolve-failed', '2', 3),
        // After the run closed and with no retry after it: nothing can send again.
        act('ops-resolve-failed', '3', 6),
        act('ops-retry', '3', 4),
        // Refused acts allow nothing.
        act('ops-resolve-failed', '4', 6, { result: 'refused', detail: 'SEND_IN_FLIGHT' }),
        act('ops-retry', '4', 7),
      ],
      runs,
    );
    expect(Object.fromEntries(asked)).toEqual({ '1': 1, '2': 1 });
  });

  it('says which acts the orders breaking an invariant had, once per order and act', () => {
    const acts = [
      act('workflow-terminate', '1', 1),
      act('workflow-terminate', '1', 2),
      act('workflow-cancel', '2', 1),
    ];
    expect(actsBehind(acts, ['1', '2', '3'])).toEqual({
      'workflow-terminate': 1,
      'workflow-cancel': 1,
      '(none)': 1,
    });
  });
});

describe('buildReport with operators', () => {
  it('allows one more message per re-send an operator asked for, and no more', () => {
    const asked = buildReport(
      facts({ '1': resent }, [act('ops-resolve-failed', '1', 6), act('ops-retry', '1', 7)]),
    );
    expect(failing(asked)).toEqual({});
    expect(asked.operators).toMatchObject({ resendsAsked: { orders: 1, resends: 1 }, acts: 2, done: 2 });

    const unasked = buildReport(facts({ '1': resent }, [act('ops-retry', '1', 7)]));
    expect(failing(unasked)).toEqual({ 'no-unrequested-duplicates-under-assume-sent': ['1'] });
    expect(unasked.invariants.find((result) => !result.holds)?.actsBehind).toEqual({ 'ops-retry': 1 });
  });

  it('does not blame a not-sent row for a message an earlier accepted attempt accounts for', () => {
    const report = buildReport(
      facts(
        {
          '1': {
            row: { state: 'failed', outcome: 'not_sent', attempts: 2, providerMessageId: null },
            attempts: [
              acceptedAttempt(1, 'm1'),
              {
                attempt: 2,
                state: 'failed',
                outcome: 'not_sent',
                unknownPolicy: null,
                dispatched: true,
                verification: null,
                finishedAt: T(2),
              },
            ],
            messages: ['m1'],
          },
          // The same, but the message is not the accepted attempt's: the not-sent record is untrue.
          '2': {
            row: { state: 'failed', outcome: 'not_sent', attempts: 2, providerMessageId: null },
            attempts: [
              acceptedAttempt(1, 'm1'),
              {
                attempt: 2,
                state: 'failed',
                outcome: 'not_sent',
                unknownPolicy: null,
                dispatched: true,
                verification: null,
                finishedAt: T(2),
              },
            ],
            messages: ['m1', 'm9'],
          },
        },
        [],
      ),
    );
    expect(failing(report)).toEqual({
      'no-unrequested-duplicates-under-assume-sent': ['2'],
      'rejected-or-not-sent-row-has-no-message': ['2'],
      'no-message-without-an-attempt': ['2'],
    });
  });

  it('fails an accepted attempt whose message never arrived, and passes a resolved row without its audit row', () => {
    const report = buildReport(
      facts(
        {
          '1': {
            row: { state: 'sent', outcome: 'accepted', attempts: 2, providerMessageId: 'm2' },
            attempts: [acceptedAttempt(1, 'm1'), acceptedAttempt(2, 'm2')],
            messages: ['m2'],
          },
          '2': {
            row: { state: 'failed', outcome: 'resolved', attempts: 1, providerMessageId: null },
            attempts: [acceptedAttempt(1, 'm3')],
            messages: ['m3'],
          },
        },
        [act('ops-resolve-failed', '2', 6)],
      ),
    );
    expect(failing(report)).toEqual({ 'accepted-attempt-has-its-message': ['1'] });
  });

  it('fails a resolve that was done while a dispatched send of an open run was in flight', () => {
    const inFlight = (runId: string) => ({
      state: 'sending',
      dispatchedAt: T(2),
      claimToken: `default/1/${runId}`,
    });
    const row: OrderStory['row'] = {
      state: 'failed',
      outcome: 'resolved',
      attempts: 1,
      providerMessageId: null,
    };
    const runs = [closedRun('r2', 5, 9), closedRun('r1', 0, 5, 'TERMINATED')];
    const during = buildReport(
      facts({ '1': { row, runs } }, [act('ops-resolve-failed', '1', 3, { rowBefore: inFlight('r1') })]),
    );
    expect(failing(during)).toEqual({ 'no-resolve-while-a-send-is-in-flight': ['1'] });

    // The same row, resolved after its run had closed: nothing in flight will record anything.
    const after = buildReport(
      facts({ '1': { row, runs } }, [act('ops-resolve-failed', '1', 6, { rowBefore: inFlight('r1') })]),
    );
    expect(failing(after)).toEqual({});
  });

  it('fails a send left paused, and a run left open; passes an unpause refused because the send had finished', () => {
    const pause = act('activity-pause', '1', 1, { activityId: '2' });
    const left = buildReport(facts({ '1': resent }, [pause]));
    expect(failing(left)).toMatchObject({ 'every-paused-send-unpaused': ['1'] });

    const gone = buildReport(
      facts({ '1': resent }, [
        pause,
        act('activity-unpause', '1', 2, { activityId: '2', result: 'refused', detail: 'ACTIVITY_GONE' }),
      ]),
    );
    expect(failing(gone)).not.toHaveProperty('every-paused-send-unpaused');

    const open = buildReport(
      facts(
        { '1': { ...resent, runs: [{ runId: 'r2', status: 'RUNNING', startedAt: T(8), closedAt: null }] } },
        [],
      ),
    );
    expect(failing(open)).toHaveProperty('every-run-closed', ['1']);
  });

  it('counts an order an operator stopped before its claim as terminal, and nothing else without a row', () => {
    const stopped = { runs: [closedRun('r1', 0, 1, 'TERMINATED')] };
    const report = buildReport(facts({ '1': stopped, '2': stopped }, [act('workflow-terminate', '1', 1)]));
    expect(failing(report)).toEqual({ 'every-order-terminal': ['2'] });
    expect(report.operators?.stoppedBeforeClaim).toBe(1);
  });

  it('lets a row left sending after its fence account for its one message (the row itself is the failure)', () => {
    const report = buildReport(
      facts(
        {
          '1': {
            row: { state: 'sending', outcome: null, attempts: 1, providerMessageId: null, dispatched: true },
            messages: ['m1'],
          },
          '2': {
            row: { state: 'sending', outcome: null, attempts: 1, providerMessageId: null, dispatched: false },
            messages: ['m2'],
          },
        },
        [],
      ),
    );
    expect(failing(report)).toEqual({
      'no-row-left-sending': ['1', '2'],
      'every-order-terminal': ['1', '2'],
      'no-message-without-an-attempt': ['2'],
    });
  });
});
