// What our statements cost at one table size: the claim, the dispatch fence and the record of new orders
// (one after the other, as a worker runs them: the product's own functions, through the product's pool
// settings), the reconciliation sweep's two queries and the worker's stuck gauge; and a dry run of the prune.
// Every statement each step ran is recorded, and EXPLAIN (ANALYZE, BUFFERS) of it is kept: a write is
// explained inside a transaction that is rolled back, so the explain changes nothing.
import { randomUUID } from 'node:crypto';
import type { QueryResultRow } from 'pg';
import { markDispatched } from '../../../src/activities/dispatchFence';
import { findConfirmedOrdersWithoutMail } from '../../../src/db/confirmedOrders';
import { countOverdueSending } from '../../../src/db/mailLogGauges';
import { workflowScopeOf } from '../../../src/db/claimToken';
import { claimOrderMailRow } from '../../../src/db/orderMailClaim';
import { listQuietSendingRows } from '../../../src/db/orderMailLog';
import { recordOutcome } from '../../../src/db/orderMailRecord';
import type { Database } from '../../../src/db/pool';
import { advanceSweepProgress, sweepNotBefore } from '../../../src/db/sweepProgress';
import { DAY_MS, pruneOrderMailHistory } from '../../../src/ops/pruneOrderMailHistory';
import type { LatencySummary } from '../latency';

export const STEPS = [
  'claim',
  'fence',
  'record',
  'sweep batch',
  'stuck-claim scan',
  'stuck gauge',
  'stuck gauge, a claim stuck',
] as const;
export type Step = (typeof STEPS)[number];

export interface StepFigures {
  step: Step;
  latency: LatencySummary;
  /** The same step on the empty database, measured in the same rounds (interleaved): the reference. */
  empty: LatencySummary;
  /** EXPLAIN (ANALYZE, BUFFERS) of each distinct statement the step ran on the filled database, in order. */
  plans: string[];
}

export interface SizeFacts {
  logRows: number;
  attemptRows: number;
  /** On-disk size of each table with its indexes and TOAST, MiB. */
  tableMiB: Record<string, number>;
  /**
   * Orders confirmed inside the sweep's look-back window: what its batch had to look through before the
   * sweep kept its mark (migration 0013); now only those since the mark less the overlap.
   */
  ordersInLookback: number;
  prune: { olderThanDays: number; seconds: number; logRowsExamined: number; attemptsDeletable: number };
}

export interface RoundResult {
  timings: Record<Step, number[]>;
  /** Recorded statements of the last sample of each step, when asked for. */
  plans: Partial<Record<Step, string[]>>;
}

interface Recorded {
  text: string;
  params: readonly unknown[];
}

/** A Database that remembers the statements it ran (for EXPLAIN) while `recording` is set. */
function recordingDatabase(db: Database): Database & { take(): Recorded[]; recording: boolean } {
  let statements: Recorded[] = [];
  const wrapper = {
    recording: false,
    query<Row extends QueryResultRow = QueryResultRow>(text: string, params: readonly unknown[] = []) {
      if (wrapper.recording) statements.push({ text, params });
      return db.query<Row>(text, params);
    },
    transaction: db.transaction.bind(db),
    close: () => db.close(),
    take() {
      const taken = statements;
      statements = [];
      return taken;
    },
  };
  return wrapper;
}

const LOOKBACK_MS = 7 * DAY_MS;
const GRACE_MS = 5 * 60 * 1000;
const SWEEP_BATCH = 100;
const SEND_TIMEOUT_MS = 60_000;

/**
 * One round on one database: `samples` new orders claimed, fenced and recorded one after the other, then
 * `repeats` times the sweep's two queries and the gauge. With `explain`, the statements of each step's last
 * sample are explained (on `admin`, rolled back).
 */
export async function measureRound(
  db: Database,
  admin: Database,
  options: { samples: number; repeats: number; explain: boolean },
): Promise<RoundResult> {
  const recorder = recordingDatabase(db);
  const timings = Object.fromEntries(STEPS.map((step) => [step, [] as number[]])) as Record<Step, number[]>;
  const recorded = new Map<Step, Recorded[]>();
  const time = async <T>(step: Step, work: () => Promise<T>, last: boolean): Promise<T> => {
    const explain = last && options.explain;
    recorder.recording = explain;
    const began = performance.now();
    try {
      return await work();
    } finally {
      timings[step].push(performance.now() - began);
      recorder.recording = false;
      if (explain) recorded.set(step, recorder.take());
    }
  };

  // New orders, as the order service commits them; then each one's claim, fence and record in turn.
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
     SELECT '山田 太郎', 'new' || g || '@example.com', 'confirmed', now() FROM generate_series(1, $1::int) AS g
     RETURNING id::text`,
    [options.samples],
  );
  for (const [index, { id: orderId }] of rows.entries()) {
    const last = index === rows.length - 1;
    const claimToken = `default/${orderId}/${randomUUID()}`;
    const claim = await time(
      'claim',
      () =>
        claimOrderMailRow(recorder, {
          orderId,
          claimToken,
          workflowScope: workflowScopeOf('default', orderId),
          issuedAt: new Date(),
          policy: 'assume-sent',
          idempotency: null,
          sendTimeoutMs: SEND_TIMEOUT_MS,
          recordedBy: 'bench 1@bench',
        }),
      last,
    );
    if (claim.kind !== 'claimed') throw new Error(`order ${orderId}: claim ${claim.kind}`);
    const fence = await time(
      'fence',
      () =>
        markDispatched(recorder, {
          orderId,
          claimToken,
          attempt: claim.attempt,
          dispatch: { destination: null, sendKey: `bench/${orderId}`, sendTimeoutMs: 60_000 },
        }),
      last,
    );
    if (fence !== 'dispatched') throw new Error(`order ${orderId}: fence ${fence}`);
    const result = await time(
      'record',
      () =>
        recordOutcome(recorder, {
          orderId,
          claimToken,
          attempt: claim.attempt,
          state: 'sent',
          outcome: 'accepted',
          unknownPolicy: null,
          providerMessageId: `sbx_${orderId}`,
          httpStatus: 202,
          error: null,
          recordedBy: 'bench 1@bench',
          expectDispatched: null,
        }),
      last,
    );
    if (result.kind !== 'recorded') throw new Error(`order ${orderId}: record ${result.kind}`);
  }

  // The sweep and the gauge, as the schedule and every worker's metrics scrape run them. In steady state the
  // previous sweep went through to its end (minutes ago; here, just now), so a batch reads from its mark.
  const progress = { namespace: 'bench', graceMs: GRACE_MS };
  await advanceSweepProgress(db, progress);
  for (let repeat = 0; repeat < options.repeats; repeat++) {
    const last = repeat === options.repeats - 1;
    await time(
      'sweep batch',
      async () =>
        findConfirmedOrdersWithoutMail(recorder, {
          graceMs: GRACE_MS,
          notBefore: await sweepNotBefore(recorder, {
            ...progress,
            lookbackMs: LOOKBACK_MS,
            confirmedSince: null,
          }),
          after: null,
          limit: SWEEP_BATCH,
        }),
      last,
    );
    await time(
      'stuck-claim scan',
      () => listQuietSendingRows(recorder, { olderThanMs: GRACE_MS, limit: SWEEP_BATCH }),
      last,
    );
    await time('stuck gauge', () => countOverdueSending(recorder, { sendTimeoutMs: SEND_TIMEOUT_MS }), last);
  }
  // The gauge's other branch, which runs only while a claim is left behind: it reads every row settled
  // since that claim (here ten minutes ago) to see how far the queue moved.
  const plans: Partial<Record<Step, string[]>> = {};
  const stuckStep = 'stuck gauge, a claim stuck';
  const stuckOrderId = await layStuckClaim(admin, 600);
  try {
    for (let repeat = 0; repeat < options.repeats; repeat++) {
      const stuck = await time(
        stuckStep,
        () => countOverdueSending(recorder, { sendTimeoutMs: SEND_TIMEOUT_MS }),
        repeat === options.repeats - 1,
      );
      if (stuck.undispatched < 1)
        throw new Error(`order ${stuckOrderId}: the gauge did not count the orphan`);
    }
    // Explained while the claim is still there: without it the plan would be the cheap branch's.
    const statements = recorded.get(stuckStep);
    if (statements !== undefined) plans[stuckStep] = await explainAll(admin, statements);
    recorded.delete(stuckStep);
  } finally {
    // The order goes too: left confirmed without a row, it would be found by every later sweep batch.
    await admin.query('DELETE FROM order_mail_log WHERE order_id = $1', [stuckOrderId]);
    await admin.query('DELETE FROM orders WHERE id = $1', [stuckOrderId]);
  }

  for (const [step, statements] of recorded) plans[step] = await explainAll(admin, statements);
  return { timings, plans };
}

/** A new order whose claim was made `secondsAgo` and never reached the fence: left behind. */
async function layStuckClaim(admin: Database, secondsAgo: number): Promise<string> {
  const { rows } = await admin.query<{ id: string }>(
    `INSERT INTO orders (customer_name, customer_email, status, confirmed_at)
     VALUES ('山田 太郎', 'stuck@example.com', 'confirmed', now() - make_interval(secs => $1)) RETURNING id::text`,
    [secondsAgo],
  );
  const orderId = rows[0]!.id;
  await admin.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, updated_at)
     VALUES ($1::bigint, 'sending', 1, 'bench/' || $1::text || '/stuck', now() - make_interval(secs => $2),
             now() - make_interval(secs => $2), now() - make_interval(secs => $2))`,
    [orderId, secondsAgo],
  );
  return orderId;
}

/** Table sizes, the look-back window's orders, and a dry run of the prune. */
export async function describeSize(db: Database, pruneOlderThanDays: number): Promise<SizeFacts> {
  const pruneStarted = performance.now();
  const prune = await pruneOrderMailHistory(db, {
    olderThanMs: pruneOlderThanDays * DAY_MS,
    batchSize: 1_000,
    dryRun: true,
  });
  const pruneSeconds = (performance.now() - pruneStarted) / 1000;
  const counts = await db.query<{ log: string; attempts: string; lookback: string }>(
    `SELECT (SELECT count(*) FROM order_mail_log)::text AS log,
            (SELECT count(*) FROM order_mail_attempts)::text AS attempts,
            (SELECT count(*) FROM orders WHERE status = 'confirmed'
               AND confirmed_at >= now() - make_interval(secs => $1::double precision / 1000))::text AS lookback`,
    [LOOKBACK_MS],
  );
  const sizes = await db.query<{ name: string; mib: number }>(
    `SELECT relname AS name, round(pg_total_relation_size(oid) / 1048576.0, 1)::float8 AS mib
       FROM pg_class WHERE relname IN ('orders', 'order_mail_log', 'order_mail_attempts') AND relkind = 'r'`,
  );
  return {
    logRows: Number(counts.rows[0]!.log),
    attemptRows: Number(counts.rows[0]!.attempts),
    tableMiB: Object.fromEntries(sizes.rows.map((row) => [row.name, row.mib])),
    ordersInLookback: Number(counts.rows[0]!.lookback),
    prune: {
      olderThanDays: pruneOlderThanDays,
      seconds: pruneSeconds,
      logRowsExamined: prune.logRowsExamined,
      attemptsDeletable: prune.attemptsDeleted,
    },
  };
}

/** EXPLAIN (ANALYZE, BUFFERS) of each statement, in a transaction rolled back after it. */
async function explainAll(admin: Database, statements: Recorded[]): Promise<string[]> {
  const plans: string[] = [];
  for (const statement of statements) {
    const plan = await admin
      .transaction(async (client) => {
        const result = await client.query<{ 'QUERY PLAN': string }>(
          `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, SUMMARY ON) ${statement.text}`,
          statement.params as unknown[],
        );
        // Roll back whatever the statement changed: throwing makes transaction() roll back.
        throw new ExplainDone(result.rows.map((row) => row['QUERY PLAN']).join('\n'));
      })
      .catch((error: unknown) => {
        if (error instanceof ExplainDone) return error.plan;
        throw error;
      });
    const text = statement.text
      .replace(/--[^\n]*/g, '')
      .replace(/\s+/g, ' ')
      .trim();
    plans.push(`${text}\n${plan}`);
  }
  return plans;
}

class ExplainDone extends Error {
  constructor(readonly plan: string) {
    super('explained');
  }
}
