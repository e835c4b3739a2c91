// The retention command against real Postgres: mails in every state and of every age, pruned; what may go
// goes (the attempts of old mails settled as sent), and nothing else moves: no log row, no attempt of a mail
// that could still be claimed (failed, sending), nothing recent, no operator act.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { main as pruneCli } from '../../src/cli/prune';
import {
  DAY_MS,
  parseRetention,
  pruneOrderMailHistory,
  PruneRefusedError,
} from '../../src/ops/pruneOrderMailHistory';
import { createOrder, openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('prune');
});

afterAll(async () => {
  await database?.close();
});

interface Mail {
  orderId: string;
  state: 'sending' | 'sent' | 'failed';
  outcome: string | null;
  ageDays: number;
  attempts: number;
}

/** An order whose mail took `attempts` attempts (all but the last not sent) and was last touched `ageDays` ago. */
async function mail(
  state: Mail['state'],
  outcome: string | null,
  ageDays: number,
  attempts = 2,
): Promise<Mail> {
  const db = database.db;
  const orderId = await createOrder(db);
  const at = `now() - make_interval(days => ${ageDays})`;
  await db.query(
    `INSERT INTO order_mail_log (order_id, state, attempts, claim_token, claim_issued_at, claimed_at, dispatched_at,
                                 outcome, unknown_policy, created_at, updated_at)
     VALUES ($1::bigint, $2, $3, 'default/' || $1::text || '/run', ${at}, ${at}, ${at}, $4,
             CASE WHEN $4 = 'unknown' THEN 'assume-sent' END, ${at}, ${at})`,
    [orderId, state, attempts, outcome],
  );
  // The audit rows of the finished attempts: a 'sending' row's current attempt has none yet.
  const finished = state === 'sending' ? attempts - 1 : attempts;
  for (let attempt = 1; attempt <= finished; attempt++) {
    const last = attempt === attempts;
    await db.query(
      `INSERT INTO order_mail_attempts (order_id, attempt, claim_token, resend_count, claimed_at, dispatched_at,
                                        finished_at, state, outcome, unknown_policy, recorded_by)
       VALUES ($1::bigint, $2, 'default/' || $1::text || '/run', 0, ${at}, ${at}, ${at}, $3, $4,
               CASE WHEN $4 = 'unknown' THEN 'assume-sent' END, 'test')`,
      // An operator's 'resolved' settles the row, not an attempt: that attempt itself ended unknown.
      [
        orderId,
        attempt,
        last ? state : 'failed',
        last ? (outcome === 'resolved' ? 'unknown' : outcome) : 'not_sent',
      ],
    );
  }
  return { orderId, state, outcome, ageDays, attempts };
}

async function snapshot(): Promise<{ log: unknown[]; attempts: Map<string, number>; acts: unknown[] }> {
  const db = database.db;
  const log = (await db.query(`SELECT * FROM order_mail_log ORDER BY order_id`)).rows;
  const counts = await db.query<{ orderId: string; count: number }>(
    `SELECT order_id::text AS "orderId", count(*)::int AS count FROM order_mail_attempts GROUP BY order_id`,
  );
  const acts = (await db.query(`SELECT * FROM order_mail_operator_acts ORDER BY id`)).rows;
  return { log, attempts: new Map(counts.rows.map((row) => [row.orderId, row.count])), acts };
}

let mails: Record<string, Mail>;

beforeEach(async () => {
  await database.db.query(
    `TRUNCATE order_mail_bulk_act_orders, order_mail_bulk_acts, order_mail_late_answers, order_mail_operator_acts,
              order_mail_observed_resets, order_mail_attempts,
              order_mail_log, order_items, orders`,
  );
  mails = {
    oldAccepted: await mail('sent', 'accepted', 120),
    oldUnknownSettledSent: await mail('sent', 'unknown', 100),
    oldResolvedSent: await mail('sent', 'resolved', 95),
    recentAccepted: await mail('sent', 'accepted', 30),
    // Could be claimed again (an operator's retry) and the claim reads its attempts: kept at any age.
    oldRejected: await mail('failed', 'rejected', 200),
    oldNotSentGaveUp: await mail('failed', 'not_sent', 150, 5),
    oldUnknownSettledFailed: await mail('failed', 'unknown', 130),
    oldStuckSending: await mail('sending', null, 110),
  };
  await createOrder(database.db); // an order with no mail yet: the sweep's to start
  await database.db.query(
    `INSERT INTO order_mail_operator_acts (order_id, act, operator, acted_at, reason)
     VALUES ($1, 'resolve', 'ops', now() - interval '95 days', 'checked with the provider')`,
    [mails.oldResolvedSent!.orderId],
  );
});

const PRUNED = ['oldAccepted', 'oldUnknownSettledSent', 'oldResolvedSent'];

describe('pruneOrderMailHistory', () => {
  it('deletes only the attempts of mails settled as sent before the cutoff; every log row stays as it was', async () => {
    const before = await snapshot();
    const result = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1_000,
      dryRun: false,
    });
    const after = await snapshot();

    expect(after.log).toEqual(before.log);
    expect(after.acts).toEqual(before.acts);
    for (const [name, { orderId, attempts, state }] of Object.entries(mails)) {
      const expected = PRUNED.includes(name) ? undefined : state === 'sending' ? attempts - 1 : attempts;
      expect(after.attempts.get(orderId), name).toBe(expected);
    }
    expect(result).toMatchObject({ dryRun: false, logRowsExamined: 3, attemptsDeleted: 6, batches: 1 });
  });

  it('a dry run counts the same and deletes nothing', async () => {
    const before = await snapshot();
    const result = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1_000,
      dryRun: true,
    });
    expect(await snapshot()).toEqual(before);
    expect(result).toMatchObject({ dryRun: true, logRowsExamined: 3, attemptsDeleted: 6 });
  });

  it('batch by batch (one log row each) it deletes the same, and a second run finds nothing left', async () => {
    const first = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1,
      dryRun: false,
    });
    expect(first).toMatchObject({ logRowsExamined: 3, attemptsDeleted: 6, batches: 3 });
    const remaining = await snapshot();
    for (const name of PRUNED) expect(remaining.attempts.get(mails[name]!.orderId)).toBeUndefined();
    const second = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1,
      dryRun: false,
    });
    expect(second.attemptsDeleted).toBe(0);
    expect(await snapshot()).toEqual(remaining);
  });

  it("an attempt with a late answer goes with its late answer; another mail's late answer stays", async () => {
    // The operator resolved the unknown as sent, and the provider's answer came after (order_mail_late_answers,
    // which references its attempt): the attempt cannot go alone, and a prune that tried failed on this
    // batch at every run, so nothing after it was ever pruned.
    const late = async (name: string, attempt: number, ageDays: number) =>
      database.db.query(
        `INSERT INTO order_mail_late_answers (order_id, attempt, outcome, provider_message_id, http_status,
                                              recorded_at, recorded_by)
         VALUES ($1::bigint, $2, 'accepted', 'msg-late', 202, now() - make_interval(days => $3), 'test')`,
        [mails[name]!.orderId, attempt, ageDays],
      );
    await late('oldResolvedSent', 2, 94);
    await late('oldUnknownSettledFailed', 2, 129); // a failed mail keeps its whole trail
    await late('recentAccepted', 2, 29);
    const lateAnswers = async () =>
      (
        await database.db.query<{ orderId: string }>(
          `SELECT order_id::text AS "orderId" FROM order_mail_late_answers ORDER BY order_id`,
        )
      ).rows.map((row) => row.orderId);

    const dry = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1,
      dryRun: true,
    });
    expect(dry).toMatchObject({ attemptsDeleted: 6, lateAnswersDeleted: 1 });
    expect(await lateAnswers()).toHaveLength(3);

    const result = await pruneOrderMailHistory(database.db, {
      olderThanMs: 90 * DAY_MS,
      batchSize: 1,
      dryRun: false,
    });
    expect(result).toMatchObject({
      logRowsExamined: 3,
      attemptsDeleted: 6,
      lateAnswersDeleted: 1,
      batches: 3,
    });
    expect(await lateAnswers()).toEqual(
      [mails.oldUnknownSettledFailed!.orderId, mails.recentAccepted!.orderId].sort(),
    );
    expect((await snapshot()).attempts.get(mails.oldResolvedSent!.orderId)).toBeUndefined();
  });

  it('refuses a retention shorter than 7 days, with nothing deleted', async () => {
    const before = await snapshot();
    await expect(
      pruneOrderMailHistory(database.db, { olderThanMs: 6 * DAY_MS, batchSize: 10, dryRun: false }),
    ).rejects.toThrow(PruneRefusedError);
    expect(await snapshot()).toEqual(before);
  });
});

describe('npm run prune', () => {
  const run = async (
    argv: string[],
    env: Record<string, string> = { DATABASE_URL: database.connectionString },
  ) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await pruneCli(argv, env, { out: (text) => out.push(text), err: (text) => err.push(text) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('prunes with --older-than and says what it did', async () => {
    const result = await run(['--older-than', '90d']);
    expect(result).toMatchObject({ code: 0, err: '' });
    expect(result.out).toContain('deleted 6 attempt row(s)');
    const after = await snapshot();
    expect(after.attempts.get(mails.oldAccepted!.orderId)).toBeUndefined();
    expect(after.attempts.get(mails.oldRejected!.orderId)).toBe(2);
  });

  it('bad arguments exit 2 and change nothing', async () => {
    const before = await snapshot();
    expect((await run([])).code).toBe(2);
    expect((await run(['--older-than', '90 days'])).code).toBe(2);
    expect((await run(['--older-than', '3d'])).code).toBe(2);
    expect((await run(['--older-than', '90d', '--batch-size', '0'])).code).toBe(2);
    expect((await run(['--older-than', '90d'], {})).err).toContain('DATABASE_URL is required');
    expect(await snapshot()).toEqual(before);
  });

  it('reads retention as days or hours', () => {
    expect(parseRetention('90d')).toBe(90 * DAY_MS);
    expect(parseRetention('720h')).toBe(30 * DAY_MS);
    expect(parseRetention('90')).toBeNull();
    expect(parseRetention('-1d')).toBeNull();
  });
});
