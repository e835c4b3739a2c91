// The runner's verdict comes from buildReport: these cases check that each invariant of issue 4 catches what it
// names (a duplicate, a row left sending, a lost message, an unexplained message) and lets the rest pass.
import { describe, expect, it } from 'vitest';
import type { AttemptFact, LogRowFact, RunFacts } from '../../dev/demo/report/facts';
import { buildReport } from '../../dev/demo/report/report';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';

interface OrderStory {
  row?: Omit<LogRowFact, 'orderId'>;
  /** Unverified attempts, settled at the start of the run unless they say otherwise. */
  attempts?: (Omit<AttemptFact, 'orderId' | 'verification' | 'finishedAt'> &
    Partial<Pick<AttemptFact, 'verification' | 'finishedAt'>>)[];
  messages?: string[];
  workflow?: string;
}

function facts(
  policy: UnknownOutcomePolicy,
  orders: Record<string, OrderStory>,
  inbox: RunFacts['inbox'] = null,
): RunFacts {
  const entries = Object.entries(orders);
  return {
    profile: 'test',
    transport: 'http',
    policy,
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
      (story.attempts ?? []).map((attempt) => ({
        orderId,
        verification: null,
        finishedAt: '2026-12-01T00:00:00.000Z',
        ...attempt,
      })),
    ),
    messages: entries.flatMap(([orderId, story]) =>
      (story.messages ?? []).map((id) => ({ orderId, id, receivedAt: '2026-12-01T00:00:00.000Z' })),
    ),
    requests: [],
    workflows: Object.fromEntries(
      entries.map(([orderId, story]) => [orderId, story.workflow ?? 'COMPLETED']),
    ),
    inbox,
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

const accepted = (id: string): OrderStory => ({
  row: { state: 'sent', outcome: 'accepted', attempts: 1, providerMessageId: id },
  attempts: [{ attempt: 1, state: 'sent', outcome: 'accepted', unknownPolicy: null, dispatched: true }],
  messages: [id],
});

const unknownThenAccepted = (first: string, second: string, policy: UnknownOutcomePolicy): OrderStory => ({
  row: { state: 'sent', outcome: 'accepted', attempts: 2, providerMessageId: second },
  attempts: [
    { attempt: 1, state: 'failed', outcome: 'unknown', unknownPolicy: policy, dispatched: true },
    { attempt: 2, state: 'sent', outcome: 'accepted', unknownPolicy: null, dispatched: true },
  ],
  messages: [first, second],
});

function failing(report: ReturnType<typeof buildReport>): Record<string, string[]> {
  return Object.fromEntries(
    report.invariants
      .filter((invariant) => !invariant.holds)
      .map((invariant) => [invariant.name, invariant.violations]),
  );
}

describe('buildReport', () => {
  it('passes a clean run and counts messages, rows, unknowns and workflows', () => {
    const report = buildReport(
      facts('assume-sent', {
        '1': accepted('m1'),
        '2': {
          row: { state: 'sent', outcome: 'unknown', attempts: 1, providerMessageId: null },
          attempts: [
            { attempt: 1, state: 'sent', outcome: 'unknown', unknownPolicy: 'assume-sent', dispatched: true },
          ],
          messages: [],
        },
        '3': {
          row: { state: 'failed', outcome: 'rejected', attempts: 1, providerMessageId: null },
          attempts: [
            { attempt: 1, state: 'failed', outcome: 'rejected', unknownPolicy: null, dispatched: true },
          ],
          workflow: 'FAILED',
        },
      }),
    );
    expect(failing(report)).toEqual({});
    expect(report.ok).toBe(true);
    expect(report.messagesPerOrder).toEqual({ '0': 2, '1': 1 });
    expect(report.rows).toEqual({ 'sent/accepted': 1, 'sent/unknown': 1, 'failed/rejected': 1 });
    expect(report.unknownOutcomes).toMatchObject({
      attempts: 1,
      resolvedAs: { 'assume-sent → sent': 1 },
      assumedSentButNotDelivered: 1,
    });
    expect(report.workflows).toEqual({ COMPLETED: 2, FAILED: 1 });
  });

  it('fails on any duplicate under assume-sent, even one the log calls unknown', () => {
    const report = buildReport(facts('assume-sent', { '1': unknownThenAccepted('m1', 'm2', 'assume-sent') }));
    expect(report.duplicates.orders).toBe(1);
    expect(failing(report)).toHaveProperty('no-duplicates-under-assume-sent', ['1']);
  });

  it('allows a duplicate under assume-failed only when an unknown outcome explains it', () => {
    const explained = buildReport(
      facts('assume-failed', { '1': unknownThenAccepted('m1', 'm2', 'assume-failed') }),
    );
    expect(failing(explained)).toEqual({});
    expect(explained.duplicates.orders).toBe(1);

    const unexplained = buildReport(
      facts('assume-failed', { '1': { ...accepted('m1'), messages: ['m1', 'm2'] } }),
    );
    expect(failing(unexplained)).toMatchObject({
      'duplicates-only-after-unknown': ['1'],
      'accepted-row-has-its-message': ['1'],
    });
  });

  it('fails on a row left sending, and on an order without a terminal row', () => {
    const report = buildReport(
      facts('assume-sent', {
        '1': {
          row: { state: 'sending', outcome: null, attempts: 1, providerMessageId: null },
          workflow: 'COMPLETED',
        },
        '2': { workflow: 'RUNNING' },
        '3': {
          row: { state: 'failed', outcome: 'not_sent', attempts: 1, providerMessageId: null },
          attempts: [
            { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null, dispatched: false },
          ],
          workflow: 'RUNNING',
        },
      }),
    );
    expect(failing(report)).toMatchObject({
      'no-row-left-sending': ['1'],
      'every-order-terminal': ['1', '2', '3'],
    });
    expect(report.rowsAgainstFacts.noTerminalRow).toBe(3);
  });

  it('fails when a sent/accepted row has no message of its own (a lost mail)', () => {
    const report = buildReport(facts('assume-sent', { '1': { ...accepted('m1'), messages: [] } }));
    expect(report.rowsAgainstFacts.acceptedWithoutMessage).toBe(1);
    expect(failing(report)).toHaveProperty('accepted-row-has-its-message', ['1']);
  });

  it('fails when a rejected or not-sent row has a message', () => {
    const report = buildReport(
      facts('assume-sent', {
        '1': {
          row: { state: 'failed', outcome: 'not_sent', attempts: 1, providerMessageId: null },
          attempts: [
            { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null, dispatched: true },
          ],
          messages: ['m1'],
          workflow: 'FAILED',
        },
      }),
    );
    expect(failing(report)).toMatchObject({
      'rejected-or-not-sent-row-has-no-message': ['1'],
      'no-message-without-an-attempt': ['1'],
    });
  });

  it('fails when a settled row has no matching audit row', () => {
    const report = buildReport(facts('assume-sent', { '1': { ...accepted('m1'), attempts: [] } }));
    expect(failing(report)).toMatchObject({ 'audit-matches-log': ['1'] });
  });

  it('checks the inbox against what the provider accepted, order by order, when the run had one', () => {
    const orders = { '1': accepted('m1'), '2': accepted('m2') };
    const inbox = (messagesPerOrder: Record<string, number>, withoutOrderId = 0): RunFacts['inbox'] => ({
      webUrl: 'http://127.0.0.1:1080',
      messagesPerOrder,
      withoutOrderId,
      unreadable: null,
    });

    const matching = buildReport(facts('assume-sent', orders, inbox({ '1': 1, '2': 1 })));
    expect(failing(matching)).toEqual({});
    expect(matching.inbox).toEqual({
      url: 'http://127.0.0.1:1080',
      messages: 2,
      messagesPerOrder: { '1': 2 },
    });

    const lostRelay = buildReport(facts('assume-sent', orders, inbox({ '1': 1 })));
    expect(failing(lostRelay)).toEqual({ 'inbox-matches-provider': ['2'] });

    const extra = buildReport(facts('assume-sent', orders, inbox({ '1': 2, '2': 1, '99': 1 }, 1)));
    expect(failing(extra)).toEqual({
      'inbox-matches-provider': ['1', '99', '1 without an order id'],
    });

    const unreadable = buildReport(
      facts('assume-sent', orders, {
        webUrl: 'http://127.0.0.1:1080',
        messagesPerOrder: {},
        withoutOrderId: 0,
        unreadable: 'the inbox could not be read: fetch failed',
      }),
    );
    expect(failing(unreadable)).toEqual({
      'inbox-matches-provider': ['the inbox could not be read: fetch failed'],
    });

    const without = buildReport(facts('assume-sent', orders));
    expect(without.inbox).toBeNull();
    expect(without.invariants.map((invariant) => invariant.name)).not.toContain('inbox-matches-provider');
  });
});
