// The claim / dispatch fence / record rules of docs/design.md §4, exercised activity by activity against real
// Postgres and the real sandbox over loopback. Each run id stands for one workflow run; two run ids with the
// same workflow id are a run and its reset.
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type ClaimResult } from '../../src/activities';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { Database } from '../../src/db/pool';
import { decideUnknownOutcome } from '../../src/shared/unknownOutcome';
import { ownAttemptFacts } from '../../src/shared/unknownOutcomeFacts';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { FailureType } from '../../src/shared/failures';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import {
  createOrder,
  openTestDatabase,
  testMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;

beforeAll(async () => {
  database = await openTestDatabase('activities');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
});
afterAll(async () => {
  await mail.close();
  await sandbox.close();
  await database.close();
});
afterEach(() => sandbox.reset());

function activitiesWith(policy: UnknownOutcomePolicy = 'assume-sent') {
  return createActivities({
    db: database.db,
    mail,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
    settings: testSettings({ unknownOutcomePolicy: policy }),
    workerIdentity: 'activity-test',
  });
}

let nextIssueTime = Date.now();
const issuedAtOf = new WeakMap<MockActivityEnvironment, number>();

/**
 * An activity environment as one workflow run of `workflowId` would give it. Each new run issues its claims
 * later than the previous run's, as the workflow's (server's) clock does for a reset run; `issuedAt`
 * overrides that. `workerClockMs` is what the worker stamps as the activity's schedule time: a worker whose
 * clock is off stamps it off, and nothing in the claim may depend on it.
 */
function run(workflowId: string, runId: string, issuedAt?: number, workerClockMs?: number) {
  nextIssueTime += 1_000;
  const env = new MockActivityEnvironment({
    namespace: 'default',
    workflowExecution: { workflowId, runId },
    scheduledTimestampMs: workerClockMs ?? issuedAt ?? nextIssueTime,
    // What the workflow gives the send (the mock's default of 1 s is shorter than the transport's deadline).
    startToCloseTimeoutMs: testSettings().sendTimeoutMs,
  });
  issuedAtOf.set(env, issuedAt ?? nextIssueTime);
  return env;
}

/** The claim activity as the run's workflow calls it: with the time it issued the claim. */
function claim(env: MockActivityEnvironment, acts: ReturnType<typeof activitiesWith>, orderId: string) {
  return exec(env, acts.claimOrderMail, { orderId, issuedAtMs: issuedAtOf.get(env)! });
}

/** The send activity's input for a claim. */
function sendInput(orderId: string, claimResult: ClaimResult & { kind: 'claimed' }) {
  return {
    orderId,
    claimToken: claimResult.claimToken,
    attempt: claimResult.attempt,
    idempotencyKey: claimResult.idempotencyKey,
  };
}

/** MockActivityEnvironment.run, typed by the activity it runs. */
function exec<Input, Output>(
  env: MockActivityEnvironment,
  activity: (input: Input) => Promise<Output>,
  input: Input,
): Promise<Output> {
  return env.run<[Input], Output, typeof activity>(activity, input);
}

function claimed(result: ClaimResult) {
  if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${JSON.stringify(result)}`);
  return result;
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ApplicationFailure);
  return error as ApplicationFailure;
}

describe('claim', () => {
  it('is idempotent for its own run: a retried claim finds its own token and makes no new attempt', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const first = claimed(await claim(env, acts, orderId));
    const retried = claimed(await claim(env, acts, orderId));
    expect(first).toMatchObject({ attempt: 1, how: 'first-claim' });
    expect(retried).toMatchObject({ attempt: 1, how: 'own-claim', claimToken: first.claimToken });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending', attempts: 1 });
  });

  it('refuses an order that does not exist, writing nothing', async () => {
    const acts = activitiesWith();
    const missing = '9123456789012345';
    const failure = await failureOf(claim(run(missing, 'run-a'), acts, missing));
    expect(failure.type).toBe(FailureType.OrderNotFound);
    expect(failure.nonRetryable).toBe(true);
    expect(await readMailLog(database.db, missing)).toBeNull();
  });

  it('takes over a closed run’s claim that never dispatched, and that run can no longer send', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const closedRun = run(orderId, 'run-a');
    const a = claimed(await claim(closedRun, acts, orderId));

    const b = claimed(await claim(run(orderId, 'run-b'), acts, orderId));
    expect(b).toMatchObject({ attempt: 2, how: 'took-over-undispatched' });

    // The old run's send, should it still execute, is stopped by the fence before any request.
    const failure = await failureOf(exec(closedRun, acts.sendOrderMail, sendInput(orderId, a)));
    expect(failure.type).toBe(FailureType.ClaimLost);
    expect(sandbox.requests()).toHaveLength(0);
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', claimToken: a.claimToken },
    ]);
  });

  it('settles a dispatched orphan by assume-sent: nothing more is sent', async () => {
    const acts = activitiesWith('assume-sent');
    const orderId = await createOrder(database.db);
    const closedRun = run(orderId, 'run-a');
    const a = claimed(await claim(closedRun, acts, orderId));
    sandbox.queueFault(orderId, { kind: 'accept-then-hang' });
    const inFlight = exec(closedRun, acts.sendOrderMail, sendInput(orderId, a));
    await waitUntil(() => sandbox.requests().length === 1);

    const b = await claim(run(orderId, 'run-b'), acts, orderId);
    expect(b).toMatchObject({ kind: 'already-sent', outcome: 'unknown' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
    });
    sandbox.releaseHeld();
    // The old run's late record is fenced off: the row has been settled by someone else.
    await inFlight.catch(() => undefined);
    const late = await exec(closedRun, acts.recordOrderMailOutcome, {
      orderId,
      claimToken: a.claimToken,
      attempt: 1,
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      providerMessageId: 'late',
      httpStatus: 202,
      error: null,
      expectDispatched: null,
    });
    // The row stays as the new run's claim settled it; the provider's late answer is not dropped: the
    // attempt's audit row keeps it.
    expect(late).toMatchObject({
      kind: 'recorded',
      alreadyRecorded: true,
      outcome: 'unknown',
      lateAnswerKept: true,
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'unknown' });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      {
        attempt: 1,
        outcome: 'unknown',
        late: { outcome: 'accepted', providerMessageId: 'late', httpStatus: 202 },
      },
    ]);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('settles a dispatched orphan by assume-failed and claims again, saying so in the log', async () => {
    const acts = activitiesWith('assume-failed');
    const orderId = await createOrder(database.db);
    const closedRun = run(orderId, 'run-a');
    const a = claimed(await claim(closedRun, acts, orderId));
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await failureOf(exec(closedRun, acts.sendOrderMail, sendInput(orderId, a)));

    const b = claimed(await claim(run(orderId, 'run-b'), acts, orderId));
    expect(b).toMatchObject({ attempt: 2, how: 'reclaimed-failed' });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'unknown', unknownPolicy: 'assume-failed' },
    ]);
  });

  it('a late claim from a closed run never takes an undispatched claim from the open run', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    // The closed run's claim was scheduled before the reset; it only executes after the new run claimed.
    const closedRun = run(orderId, 'run-a', Date.now() - 60_000);
    const openRun = run(orderId, 'run-b');
    const b = claimed(await claim(openRun, acts, orderId));

    expect(await claim(closedRun, acts, orderId)).toMatchObject({ kind: 'held-elsewhere' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sending',
      attempts: 1,
      claimToken: b.claimToken,
    });
    expect((await exec(openRun, acts.sendOrderMail, sendInput(orderId, b))).outcome).toBe('accepted');
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a late claim from a closed run never settles the open run’s dispatched send, under either policy', async () => {
    for (const policy of ['assume-sent', 'assume-failed'] as const) {
      const acts = activitiesWith(policy);
      const orderId = await createOrder(database.db);
      const closedRun = run(orderId, 'run-a', Date.now() - 60_000);
      const openRun = run(orderId, 'run-b');
      const b = claimed(await claim(openRun, acts, orderId));
      const sent = await exec(openRun, acts.sendOrderMail, sendInput(orderId, b));

      expect(await claim(closedRun, acts, orderId)).toMatchObject({
        kind: 'held-elsewhere',
      });
      const recorded = await exec(openRun, acts.recordOrderMailOutcome, {
        orderId,
        claimToken: b.claimToken,
        attempt: 1,
        state: 'sent',
        outcome: 'accepted',
        unknownPolicy: null,
        providerMessageId: sent.providerMessageId,
        httpStatus: sent.httpStatus,
        error: null,
        expectDispatched: null,
      });
      expect(recorded).toMatchObject({
        kind: 'recorded',
        state: 'sent',
        outcome: 'accepted',
        alreadyRecorded: false,
      });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }
  });

  it('orders claims by the workflow’s time, not the worker’s: a claim on a slow-clocked worker still reclaims', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const firstIssued = Date.now();
    const first = claimed(await claim(run(orderId, 'run-a', firstIssued), acts, orderId));
    await exec(run(orderId, 'run-a', firstIssued), acts.recordOrderMailOutcome, {
      orderId,
      claimToken: first.claimToken,
      attempt: 1,
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: 503,
      error: 'HTTP 503',
      expectDispatched: null,
    });
    // The run's next claim, after its backoff, lands on a worker whose clock is 30 s behind: the worker stamps
    // the activity 30 s before the first claim, while the workflow issued it 2 s after.
    const slowWorker = run(orderId, 'run-a', firstIssued + 2_000, firstIssued - 30_000);
    expect(claimed(await claim(slowWorker, acts, orderId))).toMatchObject({
      attempt: 2,
      how: 'reclaimed-failed',
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending', attempts: 2 });
  });

  it('a late claim from a closed run on a fast-clocked worker leaves the open run’s claim alone', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const closedIssued = Date.now();
    // The open run (a reset) claims 5 s later on a worker with a good clock.
    const openRun = run(orderId, 'run-b', closedIssued + 5_000);
    const b = claimed(await claim(openRun, acts, orderId));
    // The closed run's claim, issued before the reset, only executes now, on a worker 60 s ahead.
    const fastWorker = run(orderId, 'run-a', closedIssued, closedIssued + 60_000);
    expect(await claim(fastWorker, acts, orderId)).toMatchObject({
      kind: 'held-elsewhere',
      sameWorkflow: true,
    });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sending',
      attempts: 1,
      claimToken: b.claimToken,
    });
    expect((await exec(openRun, acts.sendOrderMail, sendInput(orderId, b))).outcome).toBe('accepted');
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('equal issue times order nothing: neither claim takes the row from the other', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const at = Date.now();
    const a = claimed(await claim(run(orderId, 'run-a', at), acts, orderId));
    expect(await claim(run(orderId, 'run-b', at), acts, orderId)).toMatchObject({
      kind: 'held-elsewhere',
      sameWorkflow: true,
    });
    // Its own claim is recognised whatever the times: a retry of run-a's claim.
    expect(claimed(await claim(run(orderId, 'run-a', at), acts, orderId))).toMatchObject({
      how: 'own-claim',
      attempt: 1,
      claimToken: a.claimToken,
    });
    // A claim issued later takes the undispatched claim over (run-a is closed by then).
    expect(claimed(await claim(run(orderId, 'run-c', at + 1), acts, orderId))).toMatchObject({
      how: 'took-over-undispatched',
      attempt: 2,
    });
  });

  it('does not touch a claim held by another workflow id', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    claimed(await claim(run(`other-${orderId}`, 'run-x'), acts, orderId));
    const result = await claim(run(orderId, 'run-a'), acts, orderId);
    expect(result).toMatchObject({ kind: 'held-elsewhere' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ attempts: 1, state: 'sending' });
  });
});

describe('claim of a dispatched orphan, where the provider can be asked', () => {
  const VERIFY = { settleDelayMs: 1_000, lookupTimeoutMs: 500, deadlineMs: 2_000 };
  // The claim only needs to know that this worker can ask; the asking is the verify activity's.
  const verifier = {
    lookup: null,
    webhookProvider: null,
    settleDelayMs: 1_000,
    retentionMs: null,
    witnessOrdering: { kind: 'taken-order' } as const,
    destination: {
      provider: 'generic',
      origin: 'http://127.0.0.1:1',
      scope: null,
      credentialFingerprint: null,
    },
  };

  function verifyingActivities(policy: UnknownOutcomePolicy) {
    return createActivities({
      db: database.db,
      mail,
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      settings: testSettings({ unknownOutcomePolicy: policy, verification: VERIFY }),
      verifier,
      workerIdentity: 'activity-test',
    });
  }

  async function dispatchedByClosedRun(acts: ReturnType<typeof activitiesWith>) {
    const orderId = await createOrder(database.db);
    const closedRun = run(orderId, 'run-a');
    const a = claimed(await claim(closedRun, acts, orderId));
    sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
    await failureOf(exec(closedRun, acts.sendOrderMail, sendInput(orderId, a)));
    return { orderId, a };
  }

  it('hands the attempt back to verify, changing nothing; the answer settles it, and the claim then sends', async () => {
    const acts = verifyingActivities('assume-sent');
    const { orderId, a } = await dispatchedByClosedRun(acts);
    const before = await readMailLog(database.db, orderId);

    const runB = run(orderId, 'run-b');
    const b = await claim(runB, acts, orderId);
    expect(b).toMatchObject({
      kind: 'verify-orphan',
      attempt: 1,
      holder: a.claimToken,
      sendKey: a.idempotencyKey,
    });
    expect(await readMailLog(database.db, orderId)).toEqual(before);

    const settled = await exec(runB, acts.settleVerifiedOrphanAttempt, {
      orderId,
      holder: a.claimToken,
      attempt: 1,
      answer: { kind: 'not-found', via: 'lookup', sinceDispatchMs: 5_000 },
      policy: 'assume-sent',
      issuedAtMs: issuedAtOf.get(runB)! + 1,
    });
    expect(settled).toEqual({ kind: 'settled', decision: 'verified-not-sent' });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'failed', outcome: 'not_sent', unknownPolicy: null },
    ]);
    const again = claimed(await claim(runB, acts, orderId));
    expect(again).toMatchObject({ attempt: 2, how: 'reclaimed-failed' });
  });

  it('a found send is settled sent/accepted with the provider’s id; the claim then finds it sent', async () => {
    const acts = verifyingActivities('assume-failed');
    const { orderId, a } = await dispatchedByClosedRun(acts);
    const runB = run(orderId, 'run-b');
    const settled = await exec(runB, acts.settleVerifiedOrphanAttempt, {
      orderId,
      holder: a.claimToken,
      attempt: 1,
      answer: { kind: 'found', via: 'lookup', providerMessageId: 'msg-found' },
      policy: 'assume-failed',
      issuedAtMs: issuedAtOf.get(runB)!,
    });
    expect(settled).toEqual({ kind: 'settled', decision: 'verified-accepted' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      providerMessageId: 'msg-found',
    });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, state: 'sent', outcome: 'accepted', providerMessageId: 'msg-found' },
    ]);
    expect(await claim(runB, acts, orderId)).toMatchObject({ kind: 'already-sent', outcome: 'accepted' });
  });

  it('the settlement is fenced: a claim not later, another attempt, another workflow, its own token, a settled row', async () => {
    const acts = verifyingActivities('assume-sent');
    const { orderId, a } = await dispatchedByClosedRun(acts);
    const before = await readMailLog(database.db, orderId);
    const settle = (
      env: MockActivityEnvironment,
      input: { holder?: string; attempt?: number; issuedAtMs?: number },
    ) =>
      exec(env, acts.settleVerifiedOrphanAttempt, {
        orderId,
        holder: input.holder ?? a.claimToken,
        attempt: input.attempt ?? 1,
        answer: { kind: 'not-found', via: 'lookup', sinceDispatchMs: 5_000 },
        policy: 'assume-sent',
        issuedAtMs: input.issuedAtMs ?? issuedAtOf.get(env)!,
      });
    const runB = run(orderId, 'run-b');
    // Issued at the holder's own claim time: equal times order nothing.
    expect(await settle(runB, { issuedAtMs: before!.claimIssuedAt.getTime() })).toEqual({ kind: 'changed' });
    expect(await settle(runB, { attempt: 2 })).toEqual({ kind: 'changed' });
    // Another workflow id's run may not settle this workflow's claim, nor may the holder settle its own.
    expect(await settle(run('another-workflow', 'run-x'), {})).toEqual({ kind: 'changed' });
    expect(await settle(run(orderId, 'run-a'), {})).toEqual({ kind: 'changed' });
    expect(await readMailLog(database.db, orderId)).toEqual(before);
    expect(await listAttempts(database.db, orderId)).toEqual([]);
    // Settled once; a retried settlement finds the row moved on and changes nothing more.
    expect(await settle(runB, {})).toEqual({ kind: 'settled', decision: 'verified-not-sent' });
    const settled = await readMailLog(database.db, orderId);
    expect(await settle(runB, {})).toEqual({ kind: 'changed' });
    expect(await readMailLog(database.db, orderId)).toEqual(settled);
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
  });

  it('a worker that cannot ask (no verification configured) settles by the policy', async () => {
    const acts = activitiesWith('assume-sent');
    const { orderId } = await dispatchedByClosedRun(acts);
    const b = await claim(run(orderId, 'run-b'), acts, orderId);
    expect(b).toMatchObject({ kind: 'already-sent', outcome: 'unknown' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ unknownPolicy: 'assume-sent' });
  });
});

describe('send', () => {
  it('run twice for the same attempt: the second execution makes no HTTP request', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const a = claimed(await claim(env, acts, orderId));

    const first = await exec(env, acts.sendOrderMail, sendInput(orderId, a));
    expect(first.outcome).toBe('accepted');
    const second = await failureOf(exec(env, acts.sendOrderMail, sendInput(orderId, a)));
    expect(second.type).toBe(FailureType.MailOutcomeUnknown);
    expect(second.details?.[0]).toMatchObject({ outcome: 'unknown', errorCode: 'ALREADY_DISPATCHED' });
    expect(sandbox.requests()).toHaveLength(1);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('reads once before its fence: the attempt’s provider and the order in one statement', async () => {
    const statements: string[] = [];
    const counting: Database = {
      ...database.db,
      query: (sql, params) => {
        statements.push(sql);
        return database.db.query(sql, params);
      },
    };
    const acts = createActivities({
      db: counting,
      mail,
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      settings: testSettings(),
      workerIdentity: 'activity-test',
    });
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const a = claimed(await claim(env, acts, orderId));
    statements.length = 0;
    expect((await exec(env, acts.sendOrderMail, sendInput(orderId, a))).outcome).toBe('accepted');
    // The read, then the dispatch fence; nothing else before or after the request (no provider health here).
    expect(statements).toHaveLength(2);
    expect(statements[1]).toMatch(/^UPDATE order_mail_log SET dispatched_at = now\(\)/);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });
  });

  it('renders the Japanese confirmation mail from the order loaded by id', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db, { customerName: '佐藤 花子' });
    const env = run(orderId, 'run-a');
    await exec(env, acts.sendOrderMail, sendInput(orderId, claimed(await claim(env, acts, orderId))));
    const [message] = sandbox.messagesFor(orderId);
    expect(message?.subject).toBe('ご注文ありがとうございます');
    expect(message?.text).toContain('佐藤 花子 様');
    expect(message?.text).toContain(`ご注文番号: ${orderId}`);
    expect(message?.text).toContain('合計: 8,200円（税込）');
    expect(message?.html).toContain('佐藤 花子 様');
    expect(message?.html).toContain('8,200円');
  });
});

describe('the dispatch and record fences', () => {
  // attempts goes up on every claim, so a run's stale token comes with a stale attempt; each condition must
  // still refuse on its own, and a refused answer must leave the holder's audit row to the holder.
  it('refuse a token that is not the holder’s at its attempt, and the holder’s token at another attempt', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const a = claimed(await claim(env, acts, orderId));
    const runB = `${a.claimToken.slice(0, a.claimToken.lastIndexOf('/'))}/run-b`;
    const wrong = [
      { claimToken: runB, attempt: 1 },
      { claimToken: a.claimToken, attempt: 2 },
    ];
    const held = await readMailLog(database.db, orderId);
    for (const fence of wrong) {
      const refused = await failureOf(exec(env, acts.sendOrderMail, { ...sendInput(orderId, a), ...fence }));
      expect(refused.type).not.toBe(FailureType.MailOutcomeUnknown);
    }
    expect(sandbox.requests()).toHaveLength(0);
    expect(await readMailLog(database.db, orderId)).toEqual(held);

    const sent = await exec(env, acts.sendOrderMail, sendInput(orderId, a));
    const answer = (fence: { claimToken: string; attempt: number }, accepted: boolean) =>
      exec(env, acts.recordOrderMailOutcome, {
        orderId,
        ...fence,
        state: accepted ? ('sent' as const) : ('failed' as const),
        outcome: accepted ? ('accepted' as const) : ('rejected' as const),
        unknownPolicy: null,
        providerMessageId: accepted ? sent.providerMessageId : null,
        httpStatus: accepted ? sent.httpStatus : 422,
        error: null,
        expectDispatched: null,
      });
    const dispatched = await readMailLog(database.db, orderId);
    for (const fence of wrong) {
      expect(await answer(fence, false)).toMatchObject({ kind: 'claim-lost', lateAnswerKept: false });
    }
    expect(await readMailLog(database.db, orderId)).toEqual(dispatched);
    expect(await listAttempts(database.db, orderId)).toEqual([]);
    // The holder's own answer still settles its attempt.
    expect(await answer({ claimToken: a.claimToken, attempt: 1 }, true)).toMatchObject({ kind: 'recorded' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
    expect(await listAttempts(database.db, orderId)).toMatchObject([
      { attempt: 1, claimToken: a.claimToken, state: 'sent', outcome: 'accepted' },
    ]);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});

describe('record', () => {
  it('is idempotent: a retry after a lost commit reports the same outcome and writes one audit row', async () => {
    const acts = activitiesWith();
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const a = claimed(await claim(env, acts, orderId));
    const { claimToken } = a;
    const sent = await exec(env, acts.sendOrderMail, sendInput(orderId, a));
    const outcome = {
      orderId,
      claimToken,
      attempt: 1,
      state: 'sent' as const,
      outcome: 'accepted' as const,
      unknownPolicy: null,
      providerMessageId: sent.providerMessageId,
      httpStatus: sent.httpStatus,
      error: null,
      expectDispatched: null,
    };
    expect(await exec(env, acts.recordOrderMailOutcome, outcome)).toMatchObject({
      kind: 'recorded',
      alreadyRecorded: false,
    });
    expect(await exec(env, acts.recordOrderMailOutcome, outcome)).toMatchObject({
      kind: 'recorded',
      alreadyRecorded: true,
    });
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      providerMessageId: sent.providerMessageId,
    });
  });

  it('an unknown for an attempt that never passed the dispatch fence is decided and recorded as not_sent', async () => {
    const acts = activitiesWith('assume-sent');
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const { claimToken } = claimed(await claim(env, acts, orderId));
    // What the workflow does after a start-to-close timeout: read the facts, decide, record.
    const facts = await exec(env, acts.readAttemptOutcomeFacts, { orderId, claimToken, attempt: 1 });
    expect(facts).toMatchObject({ held: true, dispatched: false, sinceKeyFirstDispatchMs: null });
    const decision = decideUnknownOutcome(
      ownAttemptFacts({
        attempt: facts,
        settings: {
          unknownOutcomePolicy: 'assume-sent',
          idempotency: null,
          sendTimeoutMs: 6_000,
          verification: null,
        },
        delayBeforeRetryMs: 0,
        anotherAttemptFollows: true,
        providerError: null,
        answer: null,
      }),
    );
    if (decision.kind === 'verify') throw new Error('unreachable: nothing to verify with');
    const result = await exec(env, acts.recordOrderMailOutcome, {
      orderId,
      claimToken,
      attempt: 1,
      state: decision.state,
      outcome: decision.outcome,
      unknownPolicy: decision.unknownPolicy,
      providerMessageId: null,
      httpStatus: null,
      error: 'the send activity timed out (START_TO_CLOSE)',
      expectDispatched: facts.dispatched,
    });
    expect(result).toMatchObject({ kind: 'recorded', state: 'failed', outcome: 'not_sent' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
    });
  });

  it('a decision made before a stalled send passed its fence is not recorded: dispatch-changed, decide again', async () => {
    const acts = activitiesWith('assume-sent');
    const orderId = await createOrder(database.db);
    const env = run(orderId, 'run-a');
    const a = claimed(await claim(env, acts, orderId));
    const facts = await exec(env, acts.readAttemptOutcomeFacts, {
      orderId,
      claimToken: a.claimToken,
      attempt: 1,
    });
    expect(facts.dispatched).toBe(false);
    // The timed-out send was only stalled: it passes the fence now and makes its request.
    await exec(env, acts.sendOrderMail, sendInput(orderId, a));
    const notSent = {
      orderId,
      claimToken: a.claimToken,
      attempt: 1,
      state: 'failed' as const,
      outcome: 'not_sent' as const,
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: null,
      error: 'no request was made',
      expectDispatched: false,
    };
    expect(await exec(env, acts.recordOrderMailOutcome, notSent)).toEqual({ kind: 'dispatch-changed' });
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sending' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
