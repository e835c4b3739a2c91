// The table's "who may run it" column (src/mailRow/transitions.ts, mayRun) against what the database really
// permits: the grants of the migrations (and src/db/roles.ts's logins) and order_mail_log's trigger for the
// case study's writer (0009, as 0050 replaced it). For every writing transition and every role group, the
// real statement (src/mailRow/statements.ts) runs as a login of that group on a row in a from-state, in a
// transaction that is rolled back; it is permitted when it took its effect as the table says (the to-state,
// and whose claim token), and the groups permitted must be exactly the column's.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/db/migrator';
import { readMailLog } from '../../src/db/orderMailLog';
import type { Database } from '../../src/db/pool';
import * as statements from '../../src/mailRow/statements';
import { ROLE_GROUPS, TRANSITIONS, type RoleGroup, type TransitionName } from '../../src/mailRow/transitions';
import {
  createOrder,
  createOutsideLogin,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
  type OutsideLogin,
} from '../support/testKit';
import { HOUR_AGO, overClient, run1, run2, seedStatements, type Audit, type Columns } from './seedRows';

let database: LeastPrivilegeDatabase;
let caseStudyLogin: OutsideLogin;
const clients = new Map<RoleGroup, pg.Client>();

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('who_may_run');
  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
  // The case study's old workers: a login in none of the service's groups that may write order_mail_log
  // (what db:roles leaves the case study table's previous owner).
  caseStudyLogin = await createOutsideLogin(database.admin, database.adminUrl, 'case_study');
  await database.admin.query(`GRANT SELECT, INSERT, UPDATE ON order_mail_log TO ${caseStudyLogin.user}`);
  // What a statement did, read inside its own transaction whatever the login may read.
  await database.admin.query(`
    CREATE FUNCTION test_row_effect(wanted BIGINT) RETURNS JSONB LANGUAGE sql SECURITY DEFINER AS $$
      SELECT jsonb_build_object(
        'row', (SELECT to_jsonb(log) FROM order_mail_log AS log WHERE log.order_id = wanted),
        'attempts', (SELECT count(*) FROM order_mail_attempts WHERE order_id = wanted),
        'late', (SELECT count(*) FROM order_mail_late_answers WHERE order_id = wanted))
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

interface LogRow {
  state: string;
  claim_token: string;
  outcome: string | null;
}

interface Effect {
  row: LogRow | null;
  attempts: number;
  late: number;
}

/** Puts the order's row (and audit rows) in a from-state, as the test run's admin, committed. */
async function put(orderId: string, columns: Columns, audits: Audit[] = []): Promise<void> {
  for (const statement of seedStatements(orderId, columns, audits)) await database.admin.query(statement);
}

/** A failed/not_sent audit row of attempt 1, finished `at`. */
const notSent = (token: string, at = 'now()'): Audit => ({ attempt: 1, token, outcome: 'not_sent', at });
const sending = (orderId: string, dispatched: boolean): Columns => ({
  state: "'sending'",
  attempts: '1',
  claim_token: `'${run1(orderId)}'`,
  claim_issued_at: HOUR_AGO,
  dispatched_at: dispatched ? HOUR_AGO : 'NULL',
});
const settledFailed = (orderId: string): Columns => ({
  state: "'failed'",
  outcome: "'not_sent'",
  attempts: '1',
  claim_token: `'${run1(orderId)}'`,
  claim_issued_at: HOUR_AGO,
});
const assumedSent = (orderId: string): Columns => ({
  state: "'sent'",
  outcome: "'unknown'",
  unknown_policy: "'assume-sent'",
  verification: "'inconclusive'",
  attempts: '1',
  claim_token: `'${run1(orderId)}'`,
  claim_issued_at: HOUR_AGO,
  dispatched_at: 'now()',
  dispatch_provider: "'postmark'",
  dispatch_origin: "'https://api.postmarkapp.com'",
  dispatch_send_key: "'key'",
});
const legacy = { claim_issued_at: "'epoch'", dispatched_at: HOUR_AGO, claim_token: "'legacy:earlier'" };

const POLICY_FAILED = {
  kind: 'policy',
  state: 'failed',
  outcome: 'unknown',
  unknownPolicy: 'assume-failed',
} as const;

interface Scenario {
  /** The from-state, committed. */
  given(orderId: string): Promise<void>;
  /** The transition's statement, on `db`. */
  run(db: Database, orderId: string): Promise<unknown>;
}

const later = { issuedAt: new Date(), provider: null, providerChoice: null };

async function readRow(orderId: string) {
  return (await readMailLog(database.admin, orderId))!;
}

const SCENARIOS = {
  firstClaim: {
    given: async () => undefined,
    run: (db, orderId) => statements.firstClaim(db, orderId, { ...later, claimToken: run2(orderId) }),
  },
  reclaimFailed: {
    given: (orderId) => put(orderId, settledFailed(orderId)),
    run: async (db, orderId) =>
      statements.reclaimFailed(db, await readRow(orderId), { ...later, claimToken: run2(orderId) }),
  },
  takeOverUndispatched: {
    given: (orderId) => put(orderId, sending(orderId, false)),
    run: async (db, orderId) =>
      statements.takeOverUndispatched(db, await readRow(orderId), {
        ...later,
        claimToken: run2(orderId),
        recordedBy: 'test',
        note: 'taken over',
      }),
  },
  markDispatched: {
    given: (orderId) => put(orderId, sending(orderId, false)),
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
    given: (orderId) => put(orderId, sending(orderId, true)),
    run: (db, orderId) =>
      statements.record(db, {
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
      }),
  },
  recordAfterClaimLost: {
    given: (orderId) =>
      put(orderId, { ...settledFailed(orderId), outcome: "'resolved'", claim_token: "'operator:someone'" }),
    run: (db, orderId) =>
      statements.recordAfterClaimLost(db, {
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
      }),
  },
  settleDispatchedOrphan: {
    given: (orderId) => put(orderId, sending(orderId, true)),
    run: async (db, orderId) =>
      statements.settleDispatchedOrphan(db, await readRow(orderId), {
        decision: POLICY_FAILED,
        note: 'settled',
        recordedBy: 'test',
        issuedAt: new Date(),
      }),
  },
  releaseUndispatchedOrphan: {
    given: (orderId) => put(orderId, sending(orderId, false)),
    run: async (db, orderId) =>
      statements.releaseUndispatchedOrphan(db, statements.seenRowOf(await readRow(orderId)), {
        note: 'released',
        recordedBy: 'test',
      }),
  },
  settleDeferredUnknown: {
    given: (orderId) => put(orderId, settledFailed(orderId)),
    run: async (db, orderId) =>
      statements.settleDeferredUnknown(db, await readRow(orderId), {
        claimToken: run2(orderId),
        issuedAt: new Date(),
        recordedBy: 'test',
        decision: POLICY_FAILED,
        dispatchedAt: new Date(Date.now() - 3_600_000),
        note: 'deferred',
        orphanNote: null,
      }),
  },
  reopenAfterSecondLook: {
    given: async (orderId) => {
      await put(orderId, assumedSent(orderId), [notSent(run1(orderId))]);
    },
    run: (db, orderId) =>
      statements.reopenAfterSecondLook(
        db,
        { orderId, claimToken: run1(orderId), attempts: 1 },
        { boundMs: 3_600_000, note: 'not found', recordedBy: 'test' },
      ),
  },
  secondLookFound: {
    given: async (orderId) => {
      await put(orderId, assumedSent(orderId), [notSent(run1(orderId))]);
    },
    run: (db, orderId) =>
      statements.secondLookFound(
        db,
        { orderId, claimToken: run1(orderId), attempts: 1 },
        { boundMs: 3_600_000, providerMessageId: 'message-1', note: 'found', recordedBy: 'test' },
      ),
  },
  operatorResolve: {
    given: (orderId) => put(orderId, settledFailed(orderId)),
    run: (db, orderId) =>
      statements.operatorResolve(db, {
        orderId,
        as: 'sent',
        reason: 'the customer has it',
        seen: { state: 'failed', attempts: 1, claimToken: run1(orderId), dispatched: false },
      }),
  },
  pruneHistory: {
    given: async (orderId) => {
      const monthAgo = "now() - interval '30 days'";
      const row = {
        state: "'sent'",
        outcome: "'accepted'",
        attempts: '2',
        claim_token: `'${run1(orderId)}'`,
        claim_issued_at: monthAgo,
        dispatched_at: monthAgo,
        updated_at: monthAgo,
      };
      await put(orderId, row, [notSent(run1(orderId), monthAgo)]);
    },
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
    given: async () => undefined,
    run: (db, orderId) => statements.caseStudyClaim(db, orderId),
  },
  caseStudyReclaim: {
    given: (orderId) => put(orderId, { ...settledFailed(orderId), ...legacy, outcome: "'legacy'" }),
    run: (db, orderId) => statements.caseStudyReclaim(db, orderId),
  },
  caseStudyRecord: {
    given: (orderId) => put(orderId, { ...sending(orderId, true), ...legacy }),
    run: (db, orderId) => statements.caseStudyRecord(db, orderId, 'sent'),
  },
  caseStudyLateRecord: {
    // This service's row after an outside writer's attempt 1: the word goes to that attempt's late answer.
    given: async (orderId) => {
      await put(orderId, { ...settledFailed(orderId), attempts: '2' }, [notSent('legacy:earlier')]);
    },
    run: (db, orderId) => statements.caseStudyLateRecord(db, orderId, 'sent'),
  },
} as const satisfies Record<Exclude<TransitionName, 'operatorRetry'>, Scenario>;

type Writing = keyof typeof SCENARIOS;

/** Whether the row moved as `name` says: to one of its to-states, under whose claim token it names. */
function tookEffect(name: Writing, before: Effect, after: Effect): boolean {
  const { to } = TRANSITIONS[name];
  const rowChanged = JSON.stringify(before.row) !== JSON.stringify(after.row);
  if (to === 'unchanged') {
    return !rowChanged && (before.attempts !== after.attempts || before.late !== after.late);
  }
  const row = after.row;
  if (!rowChanged || row === null || !(to as readonly string[]).includes(row.state)) return false;
  const outsideToken = row.claim_token.startsWith('legacy:');
  if (name === 'caseStudyClaim' || name === 'caseStudyReclaim') {
    return outsideToken && row.claim_token !== before.row?.claim_token;
  }
  if (name === 'caseStudyRecord') return outsideToken && row.outcome === 'legacy';
  return !outsideToken;
}

async function effectOf(client: pg.Client, orderId: string): Promise<Effect> {
  const { rows } = await client.query<{ effect: { row: LogRow | null; attempts: string; late: string } }>(
    'SELECT test_row_effect($1::bigint) AS effect',
    [orderId],
  );
  const { row, attempts, late } = rows[0]!.effect;
  return { row, attempts: Number(attempts), late: Number(late) };
}

/** Runs `name` as `group` on a fresh order in its from-state, rolled back; what happened. */
async function attempt(name: Writing, group: RoleGroup): Promise<string> {
  const orderId = await createOrder(database.admin);
  const scenario: Scenario = SCENARIOS[name];
  await scenario.given(orderId);
  const client = clients.get(group)!;
  await client.query('BEGIN');
  try {
    const before = await effectOf(client, orderId);
    try {
      await scenario.run(overClient(client), orderId);
    } catch (error) {
      return `refused (${String((error as { code?: unknown }).code ?? error)})`;
    }
    const after = await effectOf(client, orderId);
    if (tookEffect(name, before, after)) return 'applied';
    const seen = (effect: Effect): string =>
      `${effect.row?.state ?? 'none'} ${effect.row?.claim_token ?? ''}, attempts ${effect.attempts}, late ${effect.late}`;
    return `no effect as the table says (${seen(before)} -> ${seen(after)})`;
  } finally {
    await client.query('ROLLBACK');
  }
}

describe("the table's who-may-run column is what the database permits", () => {
  it('every transition that writes has a scenario, and the one that does not has no statement', () => {
    const writing = Object.entries(TRANSITIONS)
      .filter(([, transition]) => transition.writes)
      .map(([name]) => name);
    expect(writing.sort()).toEqual(Object.keys(SCENARIOS).sort());
    expect(Object.keys(statements)).not.toContain('operatorRetry');
  });

  it.each(Object.keys(SCENARIOS) as Writing[])('%s: exactly its groups may run it', async (name) => {
    const outcomes: Record<string, string> = {};
    for (const group of ROLE_GROUPS) outcomes[group] = await attempt(name, group);
    const permitted = ROLE_GROUPS.filter((group) => outcomes[group] === 'applied');
    expect({ permitted, outcomes }).toEqual({
      permitted: ROLE_GROUPS.filter((group) =>
        (TRANSITIONS[name].mayRun as readonly RoleGroup[]).includes(group),
      ),
      outcomes: expect.anything() as unknown,
    });
  });
});
