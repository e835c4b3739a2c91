// With verification, the run report holds the run to what it promises: every customer gets a mail, and every
// unknown outcome is settled as the provider had it. These cases check the invariants catch a customer without
// a mail and a wrong "verified not sent", and pass a verified run.
import { describe, expect, it } from 'vitest';
import type { AttemptFact, RunFacts } from '../../dev/demo/report/facts';
import { buildReport } from '../../dev/demo/report/report';

const T0 = '2026-12-01T00:00:00.000Z';
const T1 = '2026-12-01T00:00:05.000Z';

function run(
  orders: Record<
    string,
    { attempts: Omit<AttemptFact, 'orderId'>[]; messages: string[]; row: RunFacts['rows'][number] }
  >,
): RunFacts {
  const entries = Object.entries(orders);
  return {
    profile: 'test',
    transport: 'http',
    policy: 'assume-sent',
    verification: {
      provider: 'generic',
      verifies: true,
      lookups: 1,
      lookupFaults: 0,
      webhookPosts: 0,
      webhookDuplicates: 0,
    },
    orderIds: entries.map(([orderId]) => orderId),
    rows: entries.map(([, story]) => story.row),
    attempts: entries.flatMap(([orderId, story]) =>
      story.attempts.map((attempt) => ({ orderId, ...attempt })),
    ),
    messages: entries.flatMap(([orderId, story]) =>
      story.messages.map((receivedAt, index) => ({ orderId, id: `${orderId}-m${index}`, receivedAt })),
    ),
    requests: [],
    workflows: Object.fromEntries(entries.map(([orderId]) => [orderId, 'COMPLETED'])),
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
  };
}

/** The operator section of a run's facts: these acts, no runs listed, no sweeps. */
function operatorsWith(acts: NonNullable<RunFacts['operators']>['acts']): NonNullable<RunFacts['operators']> {
  return {
    acts,
    runs: {},
    sweeps: {
      scheduleEveryMs: 0,
      scheduledRuns: 0,
      finalRuns: 0,
      settledBySweep: 0,
      sendingRowsLeft: 0,
      lastReport: null,
    },
  };
}

const failing = (facts: RunFacts): string[] =>
  buildReport(facts)
    .invariants.filter((invariant) => !invariant.holds)
    .map((invariant) => invariant.name);

describe('verification invariants', () => {
  it('a verified run passes: accepted by lookup, and not sent then sent again', () => {
    const facts = run({
      '1': {
        row: { orderId: '1', state: 'sent', outcome: 'accepted', attempts: 1, providerMessageId: '1-m0' },
        attempts: [
          {
            attempt: 1,
            state: 'sent',
            outcome: 'accepted',
            unknownPolicy: null,
            dispatched: true,
            verification: 'lookup',
            finishedAt: T1,
          },
        ],
        messages: [T0],
      },
      '2': {
        row: { orderId: '2', state: 'sent', outcome: 'accepted', attempts: 2, providerMessageId: '2-m0' },
        attempts: [
          {
            attempt: 1,
            state: 'failed',
            outcome: 'not_sent',
            unknownPolicy: null,
            dispatched: true,
            verification: 'lookup',
            finishedAt: T0,
          },
          {
            attempt: 2,
            state: 'sent',
            outcome: 'accepted',
            unknownPolicy: null,
            dispatched: true,
            verification: null,
            finishedAt: T1,
          },
        ],
        messages: [T1],
      },
    });
    expect(failing(facts)).toEqual([]);
    expect(buildReport(facts).customers).toMatchObject({ customers: { one: 2, none: 0, twoOrMore: 0 } });
  });

  it('a customer without a mail fails the run, though the row says sent', () => {
    const facts = run({
      '3': {
        row: { orderId: '3', state: 'sent', outcome: 'unknown', attempts: 1, providerMessageId: null },
        attempts: [
          {
            attempt: 1,
            state: 'sent',
            outcome: 'unknown',
            unknownPolicy: 'assume-sent',
            dispatched: true,
            verification: 'inconclusive',
            finishedAt: T1,
          },
        ],
        messages: [],
      },
    });
    expect(failing(facts)).toEqual(['no-customer-without-a-mail', 'unknowns-settled-right']);
  });

  it('a "verified not sent" for a mail the provider had (a lookup before its index caught up) fails twice over', () => {
    const facts = run({
      '4': {
        row: { orderId: '4', state: 'sent', outcome: 'accepted', attempts: 2, providerMessageId: '4-m1' },
        attempts: [
          {
            attempt: 1,
            state: 'failed',
            outcome: 'not_sent',
            unknownPolicy: null,
            dispatched: true,
            verification: 'lookup',
            finishedAt: T0,
          },
          {
            attempt: 2,
            state: 'sent',
            outcome: 'accepted',
            unknownPolicy: null,
            dispatched: true,
            verification: null,
            finishedAt: T1,
          },
        ],
        messages: ['2026-11-30T23:59:59.000Z', T1],
      },
    });
    expect(failing(facts)).toEqual(
      expect.arrayContaining(['no-duplicates-under-assume-sent', 'unknowns-settled-right']),
    );
  });

  it('a customer without a mail is the operator’s doing only after an act that ends an order without one', () => {
    // Order 5 was resolved as sent by an operator before any request: no mail, and the operator said so.
    // Order 6 had no act: the same row without a mail is still a missing customer.
    const neverSent = (orderId: string) => ({
      row: {
        orderId,
        state: 'sent' as const,
        outcome: 'resolved' as const,
        attempts: 1,
        providerMessageId: null,
      },
      attempts: [],
      messages: [],
    });
    const facts = {
      ...run({ '5': neverSent('5'), '6': neverSent('6') }),
      operators: operatorsWith([
        {
          act: 'ops-resolve-sent' as const,
          orderId: '5',
          runId: null,
          at: T0,
          result: 'done' as const,
          detail: null,
          rowBefore: { state: 'failed', dispatchedAt: null, claimToken: 'default/5/run' },
        },
      ]),
    } as RunFacts;
    const report = buildReport(facts);
    const missing = report.invariants.find((invariant) => invariant.name === 'no-customer-without-a-mail');
    expect(missing?.holds).toBe(false);
    expect(missing?.violations).toEqual(['6']);
  });

  it('a run an operator reset mid-send, its attempt settled by the policy unasked: excused, and only on that order', () => {
    // docs/design.md §5 and §9: the next claim or the sweep may settle a dispatched orphan by
    // the policy, without a conclusive answer from the provider. Order 7 was reset (its run closed mid-send);
    // order 8 has the same story and no act.
    const policyUnasked = (orderId: string) => ({
      row: {
        orderId,
        state: 'sent' as const,
        outcome: 'unknown' as const,
        attempts: 1,
        providerMessageId: null,
      },
      attempts: [
        {
          attempt: 1,
          state: 'sent' as const,
          outcome: 'unknown' as const,
          unknownPolicy: 'assume-sent' as const,
          dispatched: true,
          verification: null,
          finishedAt: T1,
        },
      ],
      messages: [],
    });
    const facts = {
      ...run({ '7': policyUnasked('7'), '8': policyUnasked('8') }),
      operators: operatorsWith([
        {
          act: 'workflow-reset-first' as const,
          orderId: '7',
          runId: 'run-1',
          at: T0,
          result: 'done' as const,
          detail: null,
        },
      ]),
    } as RunFacts;
    const report = buildReport(facts);
    const named = (name: string) => report.invariants.find((invariant) => invariant.name === name);
    expect(named('no-customer-without-a-mail')).toMatchObject({ holds: false, violations: ['8'] });
    expect(named('unknowns-settled-right')).toMatchObject({ holds: false, violations: ['8'] });
    // The report still counts both customers without a mail.
    expect(report.customers.customers.none).toBe(2);
  });

  it('a cancel during the settle delay leaves the policy to decide: its settlement is excused on that order only', () => {
    const inconclusive = (orderId: string) => ({
      row: {
        orderId,
        state: 'sent' as const,
        outcome: 'unknown' as const,
        attempts: 1,
        providerMessageId: null,
      },
      attempts: [
        {
          attempt: 1,
          state: 'sent' as const,
          outcome: 'unknown' as const,
          unknownPolicy: 'assume-sent' as const,
          dispatched: true,
          verification: 'inconclusive' as const,
          finishedAt: T1,
        },
      ],
      messages: [],
    });
    const facts = {
      ...run({ '9': inconclusive('9'), '10': inconclusive('10') }),
      operators: operatorsWith([
        {
          act: 'workflow-cancel' as const,
          orderId: '9',
          runId: 'run-1',
          at: T0,
          result: 'done' as const,
          detail: null,
        },
      ]),
    } as RunFacts;
    const settled = buildReport(facts).invariants.find(
      (invariant) => invariant.name === 'unknowns-settled-right',
    );
    expect(settled).toMatchObject({ holds: false, violations: ['10'] });
  });
});
