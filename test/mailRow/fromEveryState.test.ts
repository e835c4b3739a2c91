// Each transition's real statement (src/mailRow/statements.ts) against its row of the table
// (src/mailRow/transitions.ts), from every state: from a listed from-state it takes the row to one of the
// to-states and audits exactly the attempts it ends; from any other state it changes nothing. The cases come
// from TRANSITIONS, so a new transition or from-state is covered (and fails here until it has a recipe).
// Each case seeds its row inside a transaction of the login the table says may run it, and rolls back.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator';
import { readMailLog, type MailLogRow } from '../../src/db/orderMailLog';
import type { Database } from '../../src/db/pool';
import * as statements from '../../src/mailRow/statements';
import {
  ROLE_GROUPS,
  TRANSITIONS,
  type MailRowState,
  type RoleGroup,
  type TransitionName,
} from '../../src/mailRow/transitions';
import {
  createOrder,
  createOutsideLogin,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
  type OutsideLogin,
} from '../support/testKit';
import { HOUR_AGO, overClient, run1, run2, seedStatements, type Audit, type Columns } from './seedRows';

/** Every state of the row; a new state does not compile until it is here. */
const STATES = Object.keys({ none: 0, sending: 0, sent: 0, failed: 0 } satisfies Record<
  MailRowState,
  0
>) as MailRowState[];

let database: LeastPrivilegeDatabase;
let caseStudyLogin: OutsideLogin;
const clients = new Map<RoleGroup, pg.Client>();

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('from_every_state');
  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
  caseStudyLogin = await createOutsideLogin(database.admin, database.adminUrl, 'case_study');
  await database.admin.query(`GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${caseStudyLogin.user}`);
  // The seed goes in as written (no trigger, no foreign key check), inside the caller's transaction.
  await database.admin.query(`
    CREATE FUNCTION test_seed(seed TEXT[]) RETURNS VOID LANGUAGE plpgsql SECURITY DEFINER AS $$
    DECLARE statement TEXT;
    BEGIN
      PERFORM set_config('session_replication_role', 'replica', true);
      FOREACH statement IN ARRAY seed LOOP EXECUTE statement; END LOOP;
      PERFORM set_config('session_replication_role', 'origin', true);
    END $$`);
  // What the order's rows are, read inside the caller's transaction whatever the login may read.
  await database.admin.query(`
    CREATE FUNCTION test_rows_of(wanted BIGINT) RETURNS JSONB LANGUAGE sql SECURITY DEFINER AS $$
      SELECT jsonb_build_object(
        'row', (SELECT to_jsonb(log) FROM order_mail_log AS log WHERE log.order_id = wanted),
        'attempts', (SELECT coalesce(jsonb_agg(a.attempt ORDER BY a.attempt), '[]')
                       FROM order_mail_attempts AS a WHERE a.order_id = wanted),
        'late', (SELECT count(*) FROM order_mail_late_answers WHERE order_id = wanted),
        'acts', (SELECT count(*) FROM order_mail_operator_acts WHERE order_id = wanted))
    $$`);
  const urls: Record<RoleGroup, string> = {
    worker: database.workerUrl,
    operator: database.operatorUrl,
    migrator: database.migrationUrl,
    caseStudyWriter: caseStudyLogin.connectionString,
  };
  for (const group of ROLE_GROUPS) {
    const client = new pg.Client({ connectionString: urls[group], application_name: `test ${group}` });
    await client.connect();
    clients.set(group, client);
  }
});

afterAll(async () => {
  for (const client of clients.values()) await client.end();
  await database?.close();
  await caseStudyLogin?.drop();
});

// ---- the recipes: a row for the transition, and its statement with plain values satisfying its fence ----

interface Recipe {
  /** The row the fence wants, in any state (`inState` puts it in each). */
  row(orderId: string): Columns;
  audits?(orderId: string): Audit[];
  /** `seen`: the row as read in the first listed from-state (for 'none', before it was removed). */
  run(db: Database, orderId: string, seen: MailLogRow): Promise<unknown>;
}

const MONTH_AGO = "now() - interval '30 days'";
const held = (orderId: string, dispatched: boolean): Columns => ({
  attempts: '1',
  claim_token: `'${run1(orderId)}'`,
  claim_issued_at: HOUR_AGO,
  claimed_at: HOUR_AGO,
  dispatched_at: dispatched ? HOUR_AGO : 'NULL',
});
const assumedSent = (orderId: string): Columns => ({
  ...held(orderId, true),
  outcome: "'unknown'",
  unknown_policy: "'assume-sent'",
  verification: "'inconclusive'",
  dispatched_at: 'now()',
  dispatch_provider: "'postmark'",
  dispatch_origin: "'https://api.postmarkapp.com'",
  dispatch_send_key: "'key'",
});
const legacy: Columns = {
  claim_issued_at: "'epoch'",
  dispatched_at: HOUR_AGO,
  claim_token: "'legacy:earlier'",
};

const later = () => ({ issuedAt: new Date(), provider: null, providerChoice: null });
const POLICY_FAILED = {
  kind: 'policy',
  state: 'failed',
  outcome: 'unknown',
  unknownPolicy: 'assume-failed',
} as const;
const answer = (orderId: string): statements.RecordValues => ({
  orderId,
  claimToken: run1(orderId),
  attempt: 1,
  state: 'sent',
  outcome: 'accepted',
  unknownPolicy: null,
  providerMessageId: 'message-1',
  httpStatus: 200,
  error: null,
  recordedBy: 'test',
  expectDispatched: null,
});

type Writing = {
  [name in TransitionName]: (typeof TRANSITIONS)[name]['writes'] extends true ? name : never;
}[TransitionName];

const RECIPES: Partial<Record<TransitionName, Recipe>> = {
  firstClaim: {
    row: (orderId) => held(orderId, false),
    run: (db, orderId) => statements.firstClaim(db, orderId, { ...later(), claimToken: run2(orderId) }),
  },
  reclaimFailed: {
    row: (orderId) => held(orderId, true),
    run: (db, orderId, seen) => statements.reclaimFailed(db, seen, { ...later(), claimToken: run2(orderId) }),
  },
  takeOverUndispatched: {
    row: (orderId) => held(orderId, false),
    run: (db, orderId, seen) =>
      statements.takeOverUndispatched(db, seen, {
        ...later(),
        claimToken: run2(orderId),
        recordedBy: 'test',
        note: 'taken over',
      }),
  },
  markDispatched: {
    row: (orderId) => held(orderId, false),
    run: (db, orderId) =>
      statements.markDispatched(db, {
        orderId,
        claimToken: run1(orderId),
        attempt: 1,
        provider: null,
        dispatch: {
          provider: null,
          origin: null,
          scope: null,
          credentialFingerprint: null,
          account: null,
          sendKey: 'key',
          sendTimeoutMs: 1000,
          templateName: null,
          templateSha256: null,
        },
      }),
  },
  record: {
    row: (orderId) => held(orderId, true),
    run: (db, orderId) => statements.record(db, answer(orderId)),
  },
  recordAfterClaimLost: {
    // The row has moved past the answer's attempt 1 (an attempt still live is its holder's to audit).
    row: (orderId) => ({ ...held(orderId, false), attempts: '2', claim_token: "'operator:someone'" }),
    run: (db, orderId) => statements.recordAfterClaimLost(db, answer(orderId)),
  },
  settleDispatchedOrphan: {
    row: (orderId) => held(orderId, true),
    run: (db, _orderId, seen) =>
      statements.settleDispatchedOrphan(db, seen, {
        decision: POLICY_FAILED,
        note: 'settled',
        recordedBy: 'test',
        issuedAt: new Date(),
      }),
  },
  releaseUndispatchedOrphan: {
    row: (orderId) => held(orderId, false),
    run: (db, _orderId, seen) =>
      statements.releaseUndispatchedOrphan(db, statements.seenRowOf(seen), {
        note: 'released',
        recordedBy: 'test',
      }),
  },
  settleDeferredUnknown: {
    // Attempt 1 left an unknown for a retry under the key; attempt 2 is the row (failed, or a closed run's
    // undispatched claim).
    row: (orderId) => ({ ...held(orderId, false), attempts: '2' }),
    audits: (orderId) => [
      { attempt: 1, token: run1(orderId), outcome: 'unknown', unknownPolicy: 'idempotent-retry' },
    ],
    run: (db, orderId, seen) =>
      statements.settleDeferredUnknown(db, seen, {
        claimToken: run2(orderId),
        issuedAt: new Date(),
        recordedBy: 'test',
        decision: POLICY_FAILED,
        dispatchedAt: new Date(Date.now() - 3_600_000),
        note: 'deferred',
        // As decideClaim gives it: exactly for an undispatched orphan.
        orphanNote: seen.state === 'sending' ? 'abandoned' : null,
      }),
  },
  reopenAfterSecondLook: {
    row: assumedSent,
    audits: (orderId) => [
      { attempt: 1, token: run1(orderId), outcome: 'unknown', unknownPolicy: 'assume-sent' },
    ],
    run: (db, orderId) =>
      statements.reopenAfterSecondLook(
        db,
        { orderId, claimToken: run1(orderId), attempts: 1 },
        { boundMs: 3_600_000, note: 'not found', recordedBy: 'test' },
      ),
  },
  secondLookFound: {
    row: assumedSent,
    audits: (orderId) => [
      { attempt: 1, token: run1(orderId), outcome: 'unknown', unknownPolicy: 'assume-sent' },
    ],
    run: (db, orderId) =>
      statements.secondLookFound(
        db,
        { orderId, claimToken: run1(orderId), attempts: 1 },
        { boundMs: 3_600_000, providerMessageId: 'message-1', note: 'found', recordedBy: 'test' },
      ),
  },
  operatorResolve: {
    row: (orderId) => held(orderId, false),
    run: (db, orderId, seen) =>
      statements.operatorResolve(db, {
        orderId,
        as: 'sent',
        reason: 'the customer has it',
        seen: {
          state: seen.state,
          attempts: seen.attempts,
          claimToken: seen.claimToken,
          dispatched: seen.dispatchedAt !== null,
        },
      }),
  },
  pruneHistory: {
    row: (orderId) => ({
      ...held(orderId, true),
      attempts: '2',
      claim_issued_at: MONTH_AGO,
      claimed_at: MONTH_AGO,
      dispatched_at: MONTH_AGO,
      updated_at: MONTH_AGO,
    }),
    audits: (orderId) => [{ attempt: 1, token: run1(orderId), at: MONTH_AGO }],
    run: (db) =>
      statements.pruneHistory(db, {
        cutoff: new Date(Date.now() - 10 * 86_400_000),
        cursor: null,
        batchSize: 1000,
        dryRun: false,
        withEvents: true,
      }),
  },
  caseStudyClaim: {
    row: (orderId) => held(orderId, false),
    run: (db, orderId) => statements.caseStudyClaim(db, orderId),
  },
  caseStudyReclaim: {
    row: (orderId) => ({ ...held(orderId, true), ...legacy }),
    run: (db, orderId) => statements.caseStudyReclaim(db, orderId),
  },
  caseStudyRecord: {
    row: (orderId) => ({ ...held(orderId, true), ...legacy }),
    run: (db, orderId) => statements.caseStudyRecord(db, orderId, 'sent'),
  },
  caseStudyLateRecord: {
    // This service's attempt 2 after an outside writer's attempt 1: the word goes to attempt 1's late answer.
    row: (orderId) => ({ ...held(orderId, false), attempts: '2' }),
    audits: () => [{ attempt: 1, token: 'legacy:earlier', outcome: 'not_sent' }],
    run: (db, orderId) => statements.caseStudyLateRecord(db, orderId, 'sent'),
  },
} satisfies Record<Writing, Recipe>;

/** The recipe's row in `state`, with an outcome the table's checks allow there. */
function inState(columns: Columns, state: Exclude<MailRowState, 'none'>): Columns {
  const row: Columns = { ...columns, state: `'${state}'` };
  const outcome = row.outcome ?? 'NULL';
  const dispatched = (row.dispatched_at ?? 'NULL') !== 'NULL';
  if (state === 'sending') return { ...row, outcome: 'NULL', unknown_policy: 'NULL', verification: 'NULL' };
  if (state === 'sent' && ['NULL', "'rejected'", "'not_sent'"].includes(outcome)) {
    const legacyRow = (row.claim_token ?? '').startsWith("'legacy:");
    return {
      ...row,
      outcome: legacyRow ? "'legacy'" : dispatched ? "'accepted'" : "'resolved'",
      unknown_policy: 'NULL',
    };
  }
  if (state === 'failed' && ['NULL', "'accepted'"].includes(outcome)) {
    const legacyRow = (row.claim_token ?? '').startsWith("'legacy:");
    return { ...row, outcome: legacyRow ? "'legacy'" : "'not_sent'", unknown_policy: 'NULL' };
  }
  return row;
}

/** The recipe's rows, its row in `state`. */
function recipeSeed(recipe: Recipe, orderId: string, state: Exclude<MailRowState, 'none'>): string[] {
  return seedStatements(orderId, inState(recipe.row(orderId), state), recipe.audits?.(orderId));
}

// ---- the cases ----------------------------------------------------------------------------------------------

interface Rows {
  row: (Record<string, unknown> & { state: string; attempts: number }) | null;
  attempts: number[];
  late: number;
  acts: number;
}

async function rowsOf(client: pg.Client, orderId: string): Promise<Rows> {
  const { rows } = await client.query<{ rows: Rows & { late: string; acts: string } }>(
    'SELECT test_rows_of($1::bigint) AS rows',
    [orderId],
  );
  const found = rows[0]!.rows;
  return { ...found, late: Number(found.late), acts: Number(found.acts) };
}

/** The attempts a move from `before` to `after` ended: each must have its audit row, and no other gets one. */
function endedAttempts(before: Rows['row'], after: Rows['row']): number[] {
  if (after === null) return [];
  const first = before === null ? 1 : before.state === 'sending' ? before.attempts : before.attempts + 1;
  const last = after.state === 'sending' ? after.attempts - 1 : after.attempts;
  const ended: number[] = [];
  for (let attempt = first; attempt <= last; attempt++) ended.push(attempt);
  return ended;
}

const CASES = Object.entries(TRANSITIONS)
  .filter(([, transition]) => transition.writes)
  .flatMap(([name, transition]) =>
    STATES.map((state) => ({
      name: name as TransitionName,
      state,
      listed: (transition.from as readonly MailRowState[]).includes(state),
    })),
  );

/** Seeds the order in `state`, runs the transition's statement as its first group, rolls back: what changed. */
async function runCase(name: TransitionName, recipe: Recipe, state: MailRowState) {
  const transition = TRANSITIONS[name];
  const orderId = await createOrder(database.admin);
  const client = clients.get(transition.mayRun[0])!;
  const db = overClient(client);
  await client.query('BEGIN');
  try {
    // 'none': the row the first listed from-state would be, read, then removed with its audit rows.
    const listedRow = (transition.from as readonly MailRowState[]).filter((from) => from !== 'none');
    const seededIn = state !== 'none' ? state : (listedRow[0] ?? 'failed');
    await client.query('SELECT test_seed($1)', [recipeSeed(recipe, orderId, seededIn)]);
    const seen = (await readMailLog(db, orderId))!;
    if (state === 'none') {
      await client.query('SELECT test_seed($1)', [
        [
          `DELETE FROM order_mail_attempts WHERE order_id = ${orderId}`,
          `DELETE FROM order_mail_log WHERE order_id = ${orderId}`,
        ],
      ]);
    }
    const before = await rowsOf(client, orderId);
    let error: unknown = null;
    try {
      await client.query('SAVEPOINT run');
      await recipe.run(db, orderId, seen);
    } catch (thrown) {
      error = thrown;
      await client.query('ROLLBACK TO SAVEPOINT run');
    }
    const after = await rowsOf(client, orderId);
    return { before, after, error: error === null ? null : (error as Error).message };
  } finally {
    await client.query('ROLLBACK');
  }
}

describe('every transition, from every state, on real Postgres', () => {
  it('the transition that writes nothing has no statement', () => {
    const silent = Object.entries(TRANSITIONS).filter(([, transition]) => !transition.writes);
    for (const [name] of silent) expect(Object.keys(statements)).not.toContain(name);
  });

  it.each(CASES)('$name from $state (listed: $listed)', async ({ name, state, listed }) => {
    const recipe = RECIPES[name];
    expect(recipe, `no seed recipe for the transition ${name}`).toBeDefined();
    const { before, after, error } = await runCase(name, recipe!, state);
    expect(error).toBeNull();
    const { to } = TRANSITIONS[name];
    const rowChanged = JSON.stringify(before.row) !== JSON.stringify(after.row);
    if (!listed) {
      // Not a from-state: the statement changes nothing at all.
      expect(after).toEqual(before);
      return;
    }
    if (to === 'unchanged') {
      expect(rowChanged).toBe(false);
      expect({ attempts: after.attempts, late: after.late }).not.toEqual({
        attempts: before.attempts,
        late: before.late,
      });
      return;
    }
    expect(rowChanged).toBe(true);
    expect(to).toContain(after.row?.state);
    // The attempts it ended, and only those, got their audit rows; none was removed.
    const added = after.attempts.filter((attempt) => !before.attempts.includes(attempt));
    expect({ added, removed: before.attempts.filter((a) => !after.attempts.includes(a)) }).toEqual({
      added: endedAttempts(before.row, after.row),
      removed: [],
    });
  });
});
