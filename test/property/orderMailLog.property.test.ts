// Property: whatever order concurrent workers apply their statements in, order_mail_log keeps the rules of
// docs/design.md §4. Racers are workflow runs of one order (the first run and the runs that resets start), each
// driving the real statements: the claim pass sequence (db/orderMailClaim, as the claim activity runs
// it; retried and duplicated), the dispatch fence (activities/dispatchFence; re-executed, as an activity
// reset would), the record (db/orderMailRecord, after the workflow's decision of an unknown outcome;
// retried). Beside them, in some cases, the case study's old worker (docs/adoption.md) runs jobs for the same
// order with nothing but the case study's four statements, under a login of its own (an outside writer to
// order_mail_log's trigger), and the reconciliation sweep settles an outside claim left 'sending' at any time
// (a grace period too short included). fast-check chooses the scenario and the interleaving, statement by
// statement, against real Postgres; the invariants are checked after every statement.
//
// Once every racer has finished, a final sweep also settles a closed run's claim nobody claimed again, as the
// real sweep does: a reset's, or one a run's dropped claim execution made after the run had ended.
//
// PROPERTY_RUNS sets the number of cases (default below; the 10,000 with PROPERTY_RUNS=10000).
// PROPERTY_SEED with PROPERTY_PATH replays one failing case (the seed and path a failure prints).
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { markDispatched } from '../../src/activities/dispatchFence';
import { Client as PgClient, type QueryResultRow } from 'pg';
import type { ClaimDecision } from '../../src/mailRow/decide';
import { isOutsideWriterToken } from '../../src/db/claimToken';
import { settleOrphan } from '../../src/db/orphans';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { seenRowOf } from '../../src/mailRow/statements';
import { readMailLog } from '../../src/db/orderMailLog';
import { readAttemptFacts, recordOutcome, type RecordResult } from '../../src/db/orderMailRecord';
import type { Database } from '../../src/db/pool';
import type { MailOutcome, UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import { decideUnknownOutcome } from '../../src/shared/unknownOutcome';
import { ownAttemptFacts, sweptOrphanFacts } from '../../src/shared/unknownOutcomeFacts';
import { CASE_STUDY_STATEMENTS } from '../peers/caseStudyKit';
import {
  createOutsideLogin,
  openTestDatabase,
  type OutsideLogin,
  type TestDatabase,
} from '../support/testKit';
import { Turnstile } from './turnstile';

const RUNS = Number(process.env.PROPERTY_RUNS ?? '500');
const SEED = process.env.PROPERTY_SEED === undefined ? undefined : Number(process.env.PROPERTY_SEED);
/** With PROPERTY_SEED, replays one case of that seed's run (fast-check's path, as a failure prints it). */
const PATH = process.env.PROPERTY_PATH;
/**
 * Resets may come while the old run's claim activity is still executing, so that stale claim runs after the
 * new run's. docs/design.md §4 rule 3 alone let it take the new run's claim over (a row left in 'sending'); the
 * time the claim was issued (the workflow's clock, src/db/orderMailClaim.ts) closes that gap, and this models
 * it by default. PROPERTY_STALE_CLAIMS=0 turns it off (then a reset waits for the old run's claim to finish).
 */
const STALE_CLAIMS = process.env.PROPERTY_STALE_CLAIMS !== '0';

/** What the Mail API did with one request, as only the test knows it. */
type Fate = 'accepted' | 'rejected' | 'not_sent' | 'unknown-delivered' | 'unknown-lost' | 'died-before-fence';

/**
 * One job of the old worker, and what happened to it (dev/peers/python/mail_api.py): accepted → records sent;
 * 4xx → records failed; a timeout → records sent; a 5xx or a crash → records nothing (the row stays 'sending').
 */
type OldJobFate =
  | 'accepted'
  | 'rejected'
  | 'timeout-delivered'
  | 'timeout-lost'
  | '5xx-delivered'
  | '5xx-lost'
  | 'died-before-request';

interface Scenario {
  policy: UnknownOutcomePolicy;
  maxAttempts: number;
  resets: number;
  /** Turns each reset lets pass first, so resets land early, late and in between. */
  resetDelays: number[];
  fates: Fate[];
  claimModes: ('once' | 'retried' | 'duplicated')[];
  sendReexecuted: boolean[];
  recordRetried: boolean[];
  /** The old worker's jobs for this order, run one after the other (none: no old worker in this case). */
  oldJobs: OldJobFate[];
  /** Turns the old worker lets pass before its first job. */
  oldDelay: number;
  /** Sweeps that settle an outside claim left 'sending', each after so many turns. */
  sweepDelays: number[];
  schedule: number[];
}

const fateArbitrary = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Fate>('accepted') },
  { weight: 2, arbitrary: fc.constant<Fate>('rejected') },
  { weight: 5, arbitrary: fc.constant<Fate>('not_sent') },
  { weight: 3, arbitrary: fc.constant<Fate>('unknown-delivered') },
  { weight: 2, arbitrary: fc.constant<Fate>('unknown-lost') },
  { weight: 2, arbitrary: fc.constant<Fate>('died-before-fence') },
);

const scenarioArbitrary: fc.Arbitrary<Scenario> = fc.record({
  policy: fc.constantFrom<UnknownOutcomePolicy>('assume-sent', 'assume-failed'),
  maxAttempts: fc.integer({ min: 1, max: 4 }),
  resets: fc.integer({ min: 0, max: 3 }),
  resetDelays: fc.array(fc.nat({ max: 12 }), { minLength: 3, maxLength: 3 }),
  fates: fc.array(fateArbitrary, { minLength: 16, maxLength: 16 }),
  claimModes: fc.array(fc.constantFrom('once' as const, 'retried' as const, 'duplicated' as const), {
    minLength: 16,
    maxLength: 16,
  }),
  sendReexecuted: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
  recordRetried: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
  oldJobs: fc.oneof(
    { weight: 1, arbitrary: fc.constant<OldJobFate[]>([]) },
    {
      weight: 1,
      arbitrary: fc.array(
        fc.constantFrom<OldJobFate>(
          'accepted',
          'rejected',
          'timeout-delivered',
          'timeout-lost',
          '5xx-delivered',
          '5xx-lost',
          'died-before-request',
        ),
        { minLength: 1, maxLength: 3 },
      ),
    },
  ),
  oldDelay: fc.nat({ max: 3 }),
  sweepDelays: fc.array(fc.nat({ max: 20 }), { maxLength: 2 }),
  schedule: fc.array(fc.nat({ max: 7 }), { maxLength: 160 }),
});

/**
 * Cases that run every time, before the random ones. Seed 1990585898, path 399: the old worker's claim is left
 * 'sending' (a 5xx), a reset closes run 1, run 2 finds the row held elsewhere and ends, the sweep fails the old
 * claim, and run 1's retried claim (still executing) reclaims the failed row; no later run ever claimed, so
 * claim_issued_at has nothing to order it against, and the closed run's claim is left for the sweep.
 * Seed 955263951, path 119: one run, no reset; the old worker claims and makes its request, one execution of
 * the run's duplicated claim finds the row held by it, the old worker records its 4xx ('failed'), the other
 * execution reclaims the failed row (attempt 2); the run received "held elsewhere" and ended, so that claim,
 * never received, is left for the sweep.
 */
const FIXED_EXAMPLES: [Scenario][] = [
  [
    {
      policy: 'assume-failed',
      maxAttempts: 3,
      resets: 1,
      resetDelays: [0, 12, 2],
      fates: [
        'unknown-delivered',
        'died-before-fence',
        'accepted',
        'unknown-delivered',
        'died-before-fence',
        'accepted',
        'not_sent',
        'unknown-delivered',
        'not_sent',
        'accepted',
        'not_sent',
        'unknown-delivered',
        'unknown-lost',
        'not_sent',
        'died-before-fence',
        'not_sent',
      ],
      claimModes: [
        'retried',
        'duplicated',
        'duplicated',
        'once',
        'once',
        'retried',
        'once',
        'duplicated',
        'duplicated',
        'retried',
        'duplicated',
        'retried',
        'retried',
        'duplicated',
        'once',
        'retried',
      ],
      sendReexecuted: [
        false,
        true,
        false,
        true,
        false,
        true,
        false,
        true,
        false,
        true,
        true,
        false,
        true,
        false,
        false,
        false,
      ],
      recordRetried: [
        false,
        false,
        false,
        true,
        false,
        false,
        false,
        false,
        false,
        false,
        false,
        false,
        true,
        false,
        true,
        false,
      ],
      oldJobs: ['5xx-delivered', 'rejected'],
      oldDelay: 0,
      sweepDelays: [3, 9],
      schedule: [1, 6, 4, 3, 6, 5, 3],
    },
  ],
  [
    {
      policy: 'assume-sent',
      maxAttempts: 2,
      resets: 0,
      resetDelays: [0, 7, 9],
      fates: [
        'not_sent',
        'not_sent',
        'not_sent',
        'unknown-lost',
        'unknown-lost',
        'unknown-delivered',
        'unknown-delivered',
        'accepted',
        'not_sent',
        'not_sent',
        'rejected',
        'died-before-fence',
        'not_sent',
        'accepted',
        'unknown-delivered',
        'not_sent',
      ],
      claimModes: [
        'duplicated',
        'duplicated',
        'retried',
        'duplicated',
        'duplicated',
        'retried',
        'once',
        'retried',
        'duplicated',
        'duplicated',
        'duplicated',
        'duplicated',
        'once',
        'duplicated',
        'duplicated',
        'retried',
      ],
      sendReexecuted: [
        true,
        true,
        false,
        false,
        true,
        false,
        false,
        true,
        false,
        false,
        false,
        true,
        false,
        false,
        false,
        true,
      ],
      recordRetried: [
        false,
        true,
        false,
        true,
        false,
        false,
        false,
        false,
        false,
        true,
        false,
        false,
        false,
        false,
        true,
        false,
      ],
      oldJobs: ['rejected'],
      oldDelay: 2,
      sweepDelays: [15],
      schedule: [4, 3, 3, 3, 6, 7],
    },
  ],
];

interface Request {
  claimToken: string;
  attempt: number;
  fate: Fate;
}

interface RowSnapshot {
  state: 'sending' | 'sent' | 'failed';
  attempts: number;
  claimToken: string;
  dispatched: boolean;
  outcome: MailOutcome | null;
}

interface AuditSnapshot {
  attempt: number;
  claimToken: string;
  state: 'sent' | 'failed';
  outcome: MailOutcome | 'legacy';
  dispatched: boolean;
}

/** What the mail API did with the old worker's request, in the property's own words. */
function oldRequestFate(fate: Exclude<OldJobFate, 'died-before-request'>): Fate {
  switch (fate) {
    case 'accepted':
    case 'rejected':
      return fate;
    case 'timeout-delivered':
    case '5xx-delivered':
      return 'unknown-delivered';
    case 'timeout-lost':
    case '5xx-lost':
      return 'unknown-lost';
  }
}

let database: TestDatabase;
let db: Database;
/** The old worker's connection, under a login of its own in none of this service's groups. */
let oldWorkerLogin: OutsideLogin;
let oldWorkerConnection: PgClient;
let oldWorker: Database;
/** How often each transition happened over all cases, printed at the end: shows the races were reached. */
const tally: Record<string, number> = {};
const count = (what: string): void => {
  tally[what] = (tally[what] ?? 0) + 1;
};

beforeAll(async () => {
  database = await openTestDatabase('property');
  db = database.db;
  oldWorkerLogin = await createOutsideLogin(db, database.connectionString, 'old_worker');
  await db.query(`GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${oldWorkerLogin.user}`);
  oldWorkerConnection = new PgClient({
    connectionString: oldWorkerLogin.connectionString,
    application_name: 'old worker',
  });
  await oldWorkerConnection.connect();
  oldWorker = {
    query: async <Row extends QueryResultRow>(sql: string, params?: readonly unknown[]) => {
      const result = await oldWorkerConnection.query<Row>(sql, params as unknown[]);
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },
    transaction: () => Promise.reject(new Error('the old worker makes single statements only')),
    close: () => Promise.resolve(),
  };
});
afterAll(async () => {
  console.info(`transitions over all cases: ${JSON.stringify(tally)}`);
  await oldWorkerConnection?.end();
  await database?.close();
  await oldWorkerLogin?.drop();
});

it(`keeps the order_mail_log invariants under random interleavings of racing runs (${RUNS} cases)`, async () => {
  await fc.assert(
    fc.asyncProperty(scenarioArbitrary, (scenario) => runScenario(scenario)),
    { numRuns: RUNS, seed: SEED, path: PATH, examples: FIXED_EXAMPLES, endOnFailure: true, timeout: 30_000 },
  );
}, 900_000);

async function runScenario(scenario: Scenario): Promise<void> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email) VALUES ('racer', 'racer@example.com') RETURNING id::text AS id`,
  );
  const orderId = rows[0]!.id;
  const scope = `default/${orderId}/`;
  const turnstile = new Turnstile();
  const requests: Request[] = [];
  const draws = { fate: 0, claim: 0, send: 0, record: 0 };
  const runs: {
    token: string;
    closed: boolean;
    inClaim: boolean;
    finished: boolean;
    claims: number;
    /** Attempts whose claim the run's workflow received. */
    received: Set<number>;
    /** Attempts claimed by an execution whose result the workflow never received (the other of two). */
    dropped: Set<number>;
  }[] = [];

  const startRun = (): void => {
    const run = {
      token: `${scope}run-${runs.length + 1}`,
      closed: false,
      inClaim: false,
      finished: false,
      claims: 0,
      received: new Set<number>(),
      dropped: new Set<number>(),
    };
    runs.push(run);
    turnstile.spawn(async () => {
      try {
        await workflowRun(run);
      } finally {
        run.finished = true;
      }
    });
  };

  const claim = async (run: (typeof runs)[number], label: string, issuedAt: Date): Promise<ClaimDecision> => {
    const decision = await claimOrderMailRow(
      turnstile.gated(db, label),
      {
        orderId,
        claimToken: run.token,
        issuedAt,
        workflowScope: scope,
        policy: scenario.policy,
        idempotency: null,
        sendTimeoutMs: 0,
        recordedBy: 'property',
      },
      {
        settled: (settled) => count(`orphan settled as ${settled.decision.state}`),
        rowChanged: () => undefined,
      },
    );
    count(decision.kind === 'claimed' ? `claim: ${decision.how}` : `claim: ${decision.kind}`);
    return decision;
  };

  /**
   * The claim activity: once, retried after a lost completion, or two executions at once. Of two, the workflow
   * receives one result; the other execution's statements may land after the run has moved on or ended (a
   * local activity runs again when its workflow task fails while the first execution still runs:
   * docs/design.md §6).
   */
  const claimActivity = async (run: (typeof runs)[number]): Promise<ClaimDecision> => {
    const mode = scenario.claimModes[draws.claim++ % scenario.claimModes.length]!;
    run.inClaim = true;
    // The workflow's time when it issued this claim: every execution of it shares it, a later claim of the
    // same run is later, and a later run's claims are later still (a reset closes the old run first).
    const scheduledAt = new Date(Date.UTC(2026, 0, 1) + runs.indexOf(run) * 1_000_000 + run.claims++);
    try {
      if (mode === 'once') return await claim(run, `${run.token} claim`, scheduledAt);
      if (mode === 'retried') {
        const first = await claim(run, `${run.token} claim`, scheduledAt);
        const retried = await claim(run, `${run.token} claim (retry)`, scheduledAt);
        // Rule 1: a retried claim finds its own claim, with the same attempt.
        if (first.kind === 'claimed' && !STALE_CLAIMS) {
          expect(retried, 'a retried claim must find its own claim').toMatchObject({
            kind: 'claimed',
            attempt: first.attempt,
          });
        }
        return retried;
      }
      const results = await turnstile.all(
        ['a', 'b'].map((which) => () => claim(run, `${run.token} claim (${which})`, scheduledAt)),
      );
      const claimedAttempts = results.flatMap((result) =>
        result.kind === 'claimed' ? [result.attempt] : [],
      );
      if (!STALE_CLAIMS)
        expect(new Set(claimedAttempts).size, 'two executions of one claim').toBeLessThanOrEqual(1);
      const [other, returned] = results as [ClaimDecision, ClaimDecision];
      if (other.kind === 'claimed' && !(returned.kind === 'claimed' && returned.attempt === other.attempt))
        run.dropped.add(other.attempt);
      return returned;
    } finally {
      run.inClaim = false;
    }
  };

  /** The send activity: fence, then the request, maybe executed a second time (an activity reset). */
  const sendActivity = async (
    run: (typeof runs)[number],
    attempt: number,
    fate: Fate,
  ): Promise<'accepted' | 'rejected' | 'not_sent' | 'unknown' | 'claim-lost'> => {
    // The worker died before the fence: Temporal times the send out, the workflow records unknown.
    if (fate === 'died-before-fence') return 'unknown';
    const input = {
      orderId,
      claimToken: run.token,
      attempt,
      dispatch: { destination: null, sendKey: `property/${orderId}`, sendTimeoutMs: 60_000 },
    };
    const fence = await markDispatched(turnstile.gated(db, `${run.token} fence`), input);
    count(`fence: ${fence}`);
    if (fence === 'claim-lost') return 'claim-lost';
    if (fence === 'already-dispatched') return 'unknown';
    // Nobody else runs until this thread waits again: the row is exactly what the fence left.
    const row = await readRow(orderId);
    expect(row, 'a request is made only by the attempt that holds the claim').toMatchObject({
      state: 'sending',
      claimToken: run.token,
      attempts: attempt,
      dispatched: true,
    });
    expect(
      requests.filter((request) => request.claimToken === run.token && request.attempt === attempt),
      'one request per claim attempt',
    ).toHaveLength(0);
    requests.push({ claimToken: run.token, attempt, fate });

    if (scenario.sendReexecuted[draws.send++ % scenario.sendReexecuted.length]) {
      const again = await markDispatched(turnstile.gated(db, `${run.token} fence (re-executed)`), input);
      count(`re-executed fence: ${again}`);
      expect(again, 'a re-executed send must not pass the fence again').not.toBe('dispatched');
      return again === 'claim-lost' ? 'claim-lost' : 'unknown';
    }
    if (fate === 'unknown-delivered' || fate === 'unknown-lost') return 'unknown';
    return fate;
  };

  const recordActivity = async (
    run: (typeof runs)[number],
    attempt: number,
    verdict: 'accepted' | 'rejected' | 'not_sent' | 'unknown',
  ): Promise<RecordResult> => {
    const attemptOf = { orderId, claimToken: run.token, attempt };
    // As the workflow does: an unknown is decided from the row's facts (src/shared/unknownOutcome.ts), built as
    // the workflow builds them (src/shared/unknownOutcomeFacts.ts); no provider to ask, no key to retry under.
    const decide = async () => {
      if (verdict !== 'unknown') {
        const state: 'sent' | 'failed' = verdict === 'accepted' ? 'sent' : 'failed';
        return { state, outcome: verdict, unknownPolicy: null, expectDispatched: null };
      }
      const facts = await readAttemptFacts(turnstile.gated(db, `${run.token} read facts`), attemptOf);
      const decision = decideUnknownOutcome(
        ownAttemptFacts({
          attempt: facts,
          settings: {
            unknownOutcomePolicy: scenario.policy,
            idempotency: null,
            sendTimeoutMs: 60_000,
            verification: null,
          },
          delayBeforeRetryMs: 0,
          anotherAttemptFollows: true,
          providerError: null,
          answer: null,
        }),
      );
      if (decision.kind === 'verify') throw new Error('unreachable: nothing to verify with');
      return { ...decision, expectDispatched: facts.dispatched };
    };
    const record = async (label: string, decided: Awaited<ReturnType<typeof decide>>) =>
      recordOutcome(turnstile.gated(db, label), {
        ...attemptOf,
        state: decided.state,
        outcome: decided.outcome,
        unknownPolicy: decided.unknownPolicy,
        providerMessageId: verdict === 'accepted' ? `msg-${run.token}-${attempt}` : null,
        httpStatus: verdict === 'accepted' ? 202 : null,
        error: verdict === 'accepted' ? null : `property: ${verdict}`,
        recordedBy: 'property',
        expectDispatched: decided.expectDispatched,
      });
    let decided = await decide();
    let first = await record(`${run.token} record`, decided);
    if (first.kind === 'dispatch-changed') {
      decided = await decide();
      first = await record(`${run.token} record (decided again)`, decided);
    }
    count(`record: ${first.kind}`);
    if (!scenario.recordRetried[draws.record++ % scenario.recordRetried.length]) return first;
    const retried = await record(`${run.token} record (retry)`, decided);
    // Rule 4: a retried record finds its own settled row, unless a newer run (a reset) has claimed it since.
    if (first.kind === 'recorded' && !(retried.kind === 'claim-lost' && run.closed)) {
      expect(retried, 'a retried record').toMatchObject({
        kind: 'recorded',
        state: first.state,
        outcome: first.outcome,
        alreadyRecorded: true,
      });
    }
    return retried;
  };

  /** The workflow's loop (src/workflows/orderConfirmationMail.ts), stopping when its run is closed. */
  const workflowRun = async (run: (typeof runs)[number]): Promise<void> => {
    for (;;) {
      const decision = await claimActivity(run);
      if (decision.kind === 'claimed') run.received.add(decision.attempt);
      // Not claimed: the real run ends here too (orderConfirmationMail.ts: already sent, or held by another
      // workflow id fails it).
      if (run.closed || decision.kind !== 'claimed') return;
      const fate = scenario.fates[draws.fate++ % scenario.fates.length]!;
      // A workflow task lies between two activities: a reset can close the run there, as anywhere.
      await turnstile.turn(`${run.token} workflow task`);
      if (run.closed) return;
      const verdict = await sendActivity(run, decision.attempt, fate);
      if (run.closed || verdict === 'claim-lost') return;
      await turnstile.turn(`${run.token} workflow task`);
      if (run.closed) return;
      const recorded = await recordActivity(run, decision.attempt, verdict);
      if (run.closed || recorded.kind !== 'recorded' || recorded.state === 'sent') return;
      if (recorded.outcome === 'rejected' || decision.attempt >= scenario.maxAttempts) return;
    }
  };

  // Resets: each closes the open run (its activity in flight still finishes) and starts a new run.
  turnstile.spawn(async () => {
    for (let reset = 0; reset < scenario.resets; reset++) {
      for (let wait = 0; wait <= scenario.resetDelays[reset]!; wait++) await turnstile.turn('reset');
      const current = runs[runs.length - 1]!;
      // Without stale claims, Temporal is taken to close a run only between its claim's executions.
      while (!STALE_CLAIMS && current.inClaim) await turnstile.turn('reset (waiting for the claim)');
      current.closed = true;
      startRun();
    }
  });
  startRun();

  // The case study's old worker: its jobs for this order, each the case study's send_order_mail.
  if (scenario.oldJobs.length > 0) {
    turnstile.spawn(async () => {
      for (let wait = 0; wait < scenario.oldDelay; wait++) await turnstile.turn('old worker (waiting)');
      const statement = (sql: string, label: string) =>
        turnstile.gated(oldWorker, `old worker ${label}`).query(sql, [orderId]);
      for (const fate of scenario.oldJobs) {
        let claimed = (await statement(CASE_STUDY_STATEMENTS.claim, 'claim')).rowCount === 1;
        if (!claimed) claimed = (await statement(CASE_STUDY_STATEMENTS.reclaim, 'reclaim')).rowCount === 1;
        count(claimed ? 'old worker: claimed' : 'old worker: skipped');
        if (!claimed) continue;
        // Nobody else runs until this thread waits again: the row is the one its claim made.
        const row = await readRow(orderId);
        expect(row, 'an outside claim counts as dispatched at once').toMatchObject({
          state: 'sending',
          dispatched: true,
        });
        expect(isOutsideWriterToken(row!.claimToken)).toBe(true);
        if (fate === 'died-before-request') continue;
        requests.push({ claimToken: row!.claimToken, attempt: row!.attempts, fate: oldRequestFate(fate) });
        await turnstile.turn('old worker (request)');
        if (fate === '5xx-delivered' || fate === '5xx-lost') continue;
        const state = fate === 'rejected' ? 'failed' : 'sent';
        const recorded = await statement(
          state === 'sent' ? CASE_STUDY_STATEMENTS.recordSent : CASE_STUDY_STATEMENTS.recordFailed,
          `record ${state}`,
        );
        count(`old worker: record ${recorded.rowCount === 1 ? 'settled its claim' : 'changed nothing'}`);
      }
    });
  }

  // The reconciliation sweep, settling an outside claim left 'sending' by the policy, whenever it comes.
  const sweepOutsideClaim = async (label: string, gate: boolean): Promise<void> => {
    const row = await readMailLog(db, orderId);
    if (row === null || row.state !== 'sending' || !isOutsideWriterToken(row.claimToken)) return;
    const facts = sweptOrphanFacts({ dispatched: row.dispatchedAt !== null, policy: scenario.policy });
    const settled = await settleOrphan(gate ? turnstile.gated(db, label) : db, seenRowOf(row), {
      facts,
      why: 'property: the old claim was quiet',
      recordedBy: 'property sweep',
    });
    count(`sweep: outside claim ${settled.kind}`);
  };
  for (const delay of scenario.sweepDelays) {
    turnstile.spawn(async () => {
      for (let wait = 0; wait <= delay; wait++) await turnstile.turn('sweep (waiting)');
      await sweepOutsideClaim('sweep', true);
    });
  }

  const history: { row: RowSnapshot | null; audit: AuditSnapshot[] }[] = [];
  await turnstile.drive(scenario.schedule, async () => {
    const now = await readSnapshot(orderId);
    checkInvariants(scenario.policy, requests, history[history.length - 1] ?? null, now);
    history.push(now);
  });

  // Every racer has finished: the last run settled the row, or the old worker left it 'sending' for the sweep,
  // or a closed run's late claim took it after the open run had ended (FIXED_EXAMPLES), or a claim execution
  // whose result a run never received took it after that run had ended (FIXED_EXAMPLES: the run received
  // "held elsewhere" and ended, as the real run fails). No later run holds anything to order that claim
  // against; the real sweep settles the claim of any run no longer running (docs/design.md §4 rule 3, §7),
  // so the final sweep does, and no run leaves a claim it received 'sending'.
  const left = await readMailLog(db, orderId);
  if (left?.state === 'sending' && !isOutsideWriterToken(left.claimToken)) {
    const holder = runs.find((run) => run.token === left.claimToken);
    const neverReceived =
      holder !== undefined && holder.dropped.has(left.attempts) && !holder.received.has(left.attempts);
    expect(
      holder?.closed === true || neverReceived,
      "only a closed run's claim, or one its run never received, is left 'sending' for the sweep",
    ).toBe(true);
    const settled = await settleOrphan(db, seenRowOf(left), {
      facts: sweptOrphanFacts({ dispatched: left.dispatchedAt !== null, policy: scenario.policy }),
      why: 'property: the run holding this claim was reset',
      recordedBy: 'property sweep',
    });
    count(`sweep: closed run's claim ${settled.kind}`);
  }
  await sweepOutsideClaim('final sweep', false);
  const now = await readSnapshot(orderId);
  checkInvariants(scenario.policy, requests, history[history.length - 1] ?? null, now);
  const { row: final, audit } = now;
  expect(final, 'the order has a row').not.toBeNull();
  expect(final!.state, "no row is left in 'sending' once every run has finished").not.toBe('sending');
  expect(
    audit.map((entry) => entry.attempt),
    'one audit row per attempt, 1..attempts',
  ).toEqual(Array.from({ length: final!.attempts }, (_, index) => index + 1));
}

function checkInvariants(
  policy: UnknownOutcomePolicy,
  requests: Request[],
  before: { row: RowSnapshot | null; audit: AuditSnapshot[] } | null,
  now: { row: RowSnapshot | null; audit: AuditSnapshot[] },
): void {
  const { row, audit } = now;
  const possiblyAccepted = requests.filter(
    (request) => request.fate !== 'rejected' && request.fate !== 'not_sent',
  ).length;
  const unknownSettled = audit.filter((entry) => entry.outcome === 'unknown').length;
  if (policy === 'assume-sent') {
    expect(possiblyAccepted, 'G1: at most one request that may have been accepted').toBeLessThanOrEqual(1);
  } else {
    expect(
      possiblyAccepted,
      'assume-failed: a further request that may be accepted only after an unknown was settled as failed',
    ).toBeLessThanOrEqual(1 + unknownSettled);
  }

  if (before?.row && row) {
    expect(row.attempts, 'attempts never go down').toBeGreaterThanOrEqual(before.row.attempts);
    if (before.row.state === 'sent') {
      expect(row, "'sent' is final for automation").toMatchObject({
        state: 'sent',
        attempts: before.row.attempts,
        outcome: before.row.outcome,
      });
    }
  }
  if (before) {
    expect(audit.slice(0, before.audit.length), 'the audit trail is append-only').toEqual(before.audit);
  }

  const requestOf = (claimToken: string, attempt: number): Request | undefined =>
    requests.find((request) => request.claimToken === claimToken && request.attempt === attempt);
  if (row?.state === 'sending') {
    if (isOutsideWriterToken(row.claimToken)) {
      // An outside writer has no fence: its claim is never taken for "known not dispatched".
      expect(row.dispatched, 'an outside claim counts as dispatched').toBe(true);
    } else {
      // A sending row that is not dispatched is known never to have reached the API.
      expect(Boolean(requestOf(row.claimToken, row.attempts)), 'dispatched iff a request was made').toBe(
        row.dispatched,
      );
    }
  }
  for (const entry of audit) {
    expect(entry.attempt, 'audit attempts are claimed attempts').toBeLessThanOrEqual(row?.attempts ?? 0);
    const request = requestOf(entry.claimToken, entry.attempt);
    switch (entry.outcome) {
      case 'accepted':
        expect(request?.fate, 'accepted is recorded only for an accepted request').toBe('accepted');
        break;
      case 'rejected':
        expect(request?.fate, 'rejected is recorded only for a rejected request').toBe('rejected');
        break;
      case 'not_sent':
        expect(
          request === undefined || request.fate === 'not_sent',
          'not_sent is recorded only when no request was made or it was definitely not taken',
        ).toBe(true);
        break;
      case 'unknown':
        expect(
          entry.dispatched && (request !== undefined || isOutsideWriterToken(entry.claimToken)),
          'unknown only for a dispatched request (an outside claim may have made one)',
        ).toBe(true);
        break;
      case 'legacy':
        // The old worker's own record: sent after an accepted request or a timeout, failed after a 4xx.
        expect(isOutsideWriterToken(entry.claimToken), 'legacy only for an outside claim').toBe(true);
        expect(request?.fate, 'the old record says what its request did').toSatisfy((fate) =>
          entry.state === 'failed'
            ? fate === 'rejected'
            : fate === 'accepted' || fate === 'unknown-delivered' || fate === 'unknown-lost',
        );
        break;
    }
    if (isOutsideWriterToken(entry.claimToken)) {
      expect(entry.outcome, 'an outside claim is never settled as never dispatched').not.toBe('not_sent');
    }
  }
  if (row !== null && row.state !== 'sending') {
    const own = audit.find((entry) => entry.attempt === row.attempts);
    expect(own, 'a settled row has its audit row').toMatchObject({
      claimToken: row.claimToken,
      state: row.state,
      outcome: row.outcome,
    });
  }
}

async function readRow(orderId: string): Promise<RowSnapshot | null> {
  const { rows } = await db.query<RowSnapshot>(
    `SELECT state, attempts, claim_token AS "claimToken", dispatched_at IS NOT NULL AS dispatched, outcome
       FROM order_mail_log WHERE order_id = $1`,
    [orderId],
  );
  return rows[0] ?? null;
}

/** The row and its audit rows in one statement (one snapshot): the check after every step reads both. */
async function readSnapshot(orderId: string): Promise<{ row: RowSnapshot | null; audit: AuditSnapshot[] }> {
  const { rows } = await db.query<{ row: RowSnapshot | null; audit: AuditSnapshot[] }>(
    `SELECT (SELECT json_build_object('state', state, 'attempts', attempts, 'claimToken', claim_token,
                                      'dispatched', dispatched_at IS NOT NULL, 'outcome', outcome)
               FROM order_mail_log WHERE order_id = $1) AS row,
            (SELECT coalesce(json_agg(json_build_object('attempt', attempt, 'claimToken', claim_token,
                                                        'state', state, 'outcome', outcome,
                                                        'dispatched', dispatched_at IS NOT NULL) ORDER BY id), '[]')
               FROM order_mail_attempts WHERE order_id = $1) AS audit`,
    [orderId],
  );
  return rows[0]!;
}
