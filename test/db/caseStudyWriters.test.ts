// Side by side (docs/adoption.md): the case study's old workers and this service write one adopted
// order_mail_log. Each interleaving below is played statement by statement against real Postgres: the old
// system's statements under the case study's own login (as its Python workers run), ours through the
// service's own claim, fence and record. A request counts when the writer would call the mail API: the old
// system after its claim changed a row, ours after the dispatch fence let it through.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import { migrate } from '../../src/db/migrator';
import type { ClaimDecision } from '../../src/mailRow/decide';
import { settleOrphan } from '../../src/db/orphans';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { seenRowOf } from '../../src/mailRow/statements';
import { sweptOrphanFacts } from '../../src/shared/unknownOutcomeFacts';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { recordOutcome } from '../../src/db/orderMailRecord';
import { PYTHON_PEERS_DIRECTORY } from '../../dev/peers/pythonPeers';
import { createOrder } from '../support/testKit';

/** What the fence records of a request whose transport names no destination (these tests make none). */
const NO_DESTINATION = { destination: null, sendKey: 'case-study-test', sendTimeoutMs: 60_000 };
import {
  CASE_STUDY_STATEMENTS,
  openCaseStudyDatabase,
  openOutsideWriter,
  type CaseStudyDatabase,
  type OutsideWriter,
} from '../peers/caseStudyKit';

let database: CaseStudyDatabase;
let oldSystem: OutsideWriter;

beforeAll(async () => {
  database = await openCaseStudyDatabase('case_study_writers');
  await migrate(database.connectionString, { adopt: true });
  oldSystem = await openOutsideWriter(database.caseStudyConnectionString);
});
afterAll(async () => {
  await oldSystem?.close();
  await database?.close();
});

/** One workflow run of this service for an order: its token, and its claims in increasing workflow time. */
function ourRun(orderId: string, run: number) {
  const workflowScope = `default/${orderId}/`;
  const claimToken = `${workflowScope}run-${run}`;
  let clock = Date.UTC(2026, 11, 1) + run * 1_000_000;
  return {
    claimToken,
    claim: (): Promise<ClaimDecision> =>
      claimOrderMailRow(database.db, {
        orderId,
        claimToken,
        workflowScope,
        issuedAt: new Date((clock += 1_000)),
        policy: 'assume-sent',
        idempotency: null,
        sendTimeoutMs: 8_000,
        recordedBy: 'test',
      }),
    /** The send's first step: true when the fence let this attempt make its request. */
    fence: async (attempt: number): Promise<boolean> =>
      (await markDispatched(database.db, { orderId, claimToken, attempt, dispatch: NO_DESTINATION })) ===
      'dispatched',
    record: (attempt: number, outcome: 'accepted' | 'not_sent' | 'rejected') =>
      recordOutcome(database.db, {
        orderId,
        claimToken,
        attempt,
        state: outcome === 'accepted' ? 'sent' : 'failed',
        outcome,
        unknownPolicy: null,
        providerMessageId: outcome === 'accepted' ? `msg-${claimToken}-${attempt}` : null,
        httpStatus: outcome === 'accepted' ? 202 : 429,
        error: outcome === 'accepted' ? null : 'HTTP 429',
        recordedBy: 'test',
        expectDispatched: null,
      }),
  };
}

describe('the case study statements on the adopted table', () => {
  it('are the Python worker’s own, word for word', async () => {
    const source = await readFile(path.join(PYTHON_PEERS_DIRECTORY, 'case_study_worker.py'), 'utf8');
    // Python joins adjacent string literals; so does this.
    const joined = source.replace(/"\s*\n\s*"/g, '');
    for (const statement of Object.values(CASE_STUDY_STATEMENTS)) {
      expect(joined).toContain(statement.replace('$1', '%s'));
    }
  });

  it('the known hazard: the old claim of a failed row this service holds never makes a second request', async () => {
    // Our run claims; its send ends "not sent" before the fence (the connection was refused), and it records
    // failed: it will claim again after the backoff.
    const orderId = await createOrder(database.db);
    const requests: string[] = [];
    const run = ourRun(orderId, 1);
    const first = await run.claim();
    expect(first).toMatchObject({ kind: 'claimed', attempt: 1 });
    await run.record(1, 'not_sent');

    // Meanwhile an old worker's job for the same order runs: its claim is the UPDATE of a failed row, which
    // moves it to 'sending' without touching (without knowing) our claim token.
    if (await oldSystem.claim(orderId)) requests.push('old system');

    // Our run's next claim, then its send.
    const again = await run.claim();
    if (again.kind === 'claimed' && (await run.fence(again.attempt))) requests.push('this service');

    expect(requests, 'requests to the mail API for one order').toHaveLength(1);
    // The row stays ours: the old claim changed nothing, and our run sends attempt 2 once.
    expect(requests).toEqual(['this service']);
    expect(again).toMatchObject({ kind: 'claimed', attempt: 2, how: 'reclaimed-failed' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sending',
      claimToken: run.claimToken,
      attempts: 2,
    });
  });
});

describe('each interleaving of the two systems on one order', () => {
  it('the old system claims first: ours reports it held elsewhere and sends nothing; its sent row is final', async () => {
    const orderId = await createOrder(database.db);
    expect(await oldSystem.claim(orderId)).toBe(true);
    const row = await readMailLog(database.db, orderId);
    // No fence of its own: from its claim on, the row counts as dispatched (never "known not sent").
    expect(row).toMatchObject({ state: 'sending', attempts: 1, outcome: null });
    expect(row!.claimToken).toMatch(/^legacy:/);
    expect(row!.dispatchedAt).not.toBeNull();

    const run = ourRun(orderId, 1);
    expect(await run.claim()).toMatchObject({ kind: 'held-elsewhere', sameWorkflow: false });
    expect(await oldSystem.record(orderId, 'sent')).toBe(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'legacy' });
    expect(await ourRun(orderId, 2).claim()).toMatchObject({ kind: 'already-sent', outcome: 'legacy' });
    const audit = await listAttempts(database.db, orderId);
    expect(audit).toMatchObject([{ attempt: 1, state: 'sent', outcome: 'legacy' }]);
    expect(audit[0]!.recordedBy).toMatch(/^outside writer /);
  });

  it('the old system got a 4xx: ours claims the failed row and sends once; the old reclaim then matches nothing', async () => {
    const orderId = await createOrder(database.db);
    expect(await oldSystem.claim(orderId)).toBe(true);
    expect(await oldSystem.record(orderId, 'failed')).toBe(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'legacy' });

    const run = ourRun(orderId, 1);
    const claimed = await run.claim();
    expect(claimed).toMatchObject({ kind: 'claimed', attempt: 2, how: 'reclaimed-failed' });
    expect(await run.fence(2)).toBe(true);
    // The old queue runs the job again: its claim finds the row ours and skips it, as it skips 'sending'.
    expect(await oldSystem.claim(orderId)).toBe(false);
    expect(await run.record(2, 'accepted')).toMatchObject({ kind: 'recorded', state: 'sent' });
    expect(await oldSystem.claim(orderId)).toBe(false);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 2,
      claimToken: run.claimToken,
    });
  });

  it('the old system reclaims its failed row first: ours reports it held elsewhere', async () => {
    const orderId = await createOrder(database.db);
    expect(await oldSystem.claim(orderId)).toBe(true);
    await oldSystem.record(orderId, 'failed');
    expect(await oldSystem.claim(orderId)).toBe(true);
    const row = await readMailLog(database.db, orderId);
    expect(row).toMatchObject({ state: 'sending', attempts: 2 });
    expect(row!.dispatchedAt).not.toBeNull();
    expect(await ourRun(orderId, 1).claim()).toMatchObject({ kind: 'held-elsewhere', sameWorkflow: false });
  });

  it('an old record that comes after its attempt was settled changes nothing, and is kept as a late answer', async () => {
    const orderId = await createOrder(database.db);
    expect(await oldSystem.claim(orderId)).toBe(true);
    // The sweep settles the quiet claim by the policy (here as failed, so ours may send), then ours claims it.
    const row = (await readMailLog(database.db, orderId))!;
    const settled = await settleOrphan(database.db, seenRowOf(row), {
      facts: sweptOrphanFacts({ dispatched: true, policy: 'assume-failed' }),
      why: 'test: the old claim was quiet',
      recordedBy: 'test sweep',
    });
    expect(settled.kind).toBe('settled');
    const run = ourRun(orderId, 1);
    expect(await run.claim()).toMatchObject({ kind: 'claimed', attempt: 2 });
    const ours = await readMailLog(database.db, orderId);

    // The old worker's record of attempt 1 arrives at last, and changes nothing of our attempt 2.
    expect(await oldSystem.record(orderId, 'sent')).toBe(0);
    expect(await readMailLog(database.db, orderId)).toEqual(ours);
    expect(await run.fence(2)).toBe(true);
    const audit = await listAttempts(database.db, orderId);
    expect(audit).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
    ]);
    expect(audit[0]!.late).toMatchObject({ outcome: 'legacy' });
    expect(audit[0]!.late!.note).toContain('state=sent');
  });
});

describe('the old statements on every kind of row', () => {
  // Rows this service made, in each state its statements leave; the old statements must neither fail on them
  // nor change them.
  const ours: { name: string; make: (orderId: string) => Promise<void> }[] = [
    { name: 'sending, not dispatched', make: async (orderId) => void (await ourRun(orderId, 1).claim()) },
    {
      name: 'sending, dispatched',
      make: async (orderId) => {
        const run = ourRun(orderId, 1);
        await run.claim();
        await run.fence(1);
      },
    },
    {
      name: 'sent, accepted',
      make: async (orderId) => {
        const run = ourRun(orderId, 1);
        await run.claim();
        await run.fence(1);
        await run.record(1, 'accepted');
      },
    },
    {
      name: 'failed, not sent',
      make: async (orderId) => {
        const run = ourRun(orderId, 1);
        await run.claim();
        await run.record(1, 'not_sent');
      },
    },
    {
      name: 'failed, rejected',
      make: async (orderId) => {
        const run = ourRun(orderId, 1);
        await run.claim();
        await run.fence(1);
        await run.record(1, 'rejected');
      },
    },
  ];
  for (const { name, make } of ours) {
    it(`a row of ours (${name}) stays exactly as it was`, async () => {
      const orderId = await createOrder(database.db);
      await make(orderId);
      const before = await readMailLog(database.db, orderId);
      expect(await oldSystem.claim(orderId)).toBe(false);
      expect(await oldSystem.record(orderId, 'failed')).toBe(0);
      expect(await oldSystem.record(orderId, 'sent')).toBe(0);
      expect(await oldSystem.claim(orderId)).toBe(false);
      expect(await readMailLog(database.db, orderId)).toEqual(before);
    });
  }
});
