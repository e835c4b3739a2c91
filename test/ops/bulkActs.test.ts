// `npm run ops -- bulk …` (docs/operating.md "Acting on many orders"), over a real Postgres, a real Temporal dev
// server and the HTTP sandbox, under an operator's own login: a dry run saves its selection and changes nothing
// else; a run acts on exactly that selection, one audited act per order, or refuses with the difference when it
// changed; a run interrupted between an act and its commit resumes by its id, acts on the rest only and never
// twice on one order; an order its act refuses is marked so and the run goes on; the workers' login may not
// write a selection; and in an incident, runs a bulk retry resets under a hold wait for the resume.
// The incident runs beside the rest, on a database, worker and sandbox of its own: a hold is the database's, and
// the rest counts every row, act and request of its own (issue 38).
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../../src/cli/ops';
import { listBulkOrders, readBulkAct, selectionHash } from '../../src/db/bulkActs';
import { listObservedResets, listOperatorActs } from '../../src/db/operatorActs';
import { readMailLog } from '../../src/db/orderMailLog';
import { createDatabase, type Database } from '../../src/db/pool';
import { dryRunBulkAct, runBulkAct, SelectionChanged } from '../../src/ops/bulkActs';
import type { OpsContext } from '../../src/ops/opsContext';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { retryOrderMail } from '../../src/ops/retryOrderMail';
import type { MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  closeInReverse,
  createOperatorLogin,
  createOrder,
  createOutsideLogin,
  openTestServices,
  startTestWorker,
  testSettings,
  waitFor,
  type OutsideLogin,
  type TestDatabase,
} from '../support/testKit';

/** A database, sandbox and client, one assume-sent worker (the only one these tests use) and an operator. */
interface Bench {
  database: TestDatabase;
  sandbox: MailSandbox;
  client: Client;
  taskQueue: string;
  operator: OutsideLogin;
}

async function openBench(prefix: string, closers: (() => Promise<void>)[]): Promise<Bench> {
  const { database, sandbox, mail, client } = await openTestServices(prefix, closers);
  const worker = await startTestWorker({ db: database.db, mail, settings: testSettings() });
  closers.push(() => worker.stop());
  const operator = await createOperatorLogin(database.db, database.connectionString, `${prefix}op`);
  // Dropped after the database (closers run in reverse): the login owns nothing once it is gone.
  closers.unshift(() => operator.drop());
  return { database, sandbox, client, taskQueue: worker.taskQueue, operator };
}

const closers: (() => Promise<void>)[] = [];
let bench: Bench;
let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let taskQueue: string;
let operator: OutsideLogin;
let workerLogin: OutsideLogin | undefined;
let operatorDb: Database | undefined;

// Group A: 200 orders whose mail failed (the sandbox refuses their address), then fixed: the selection.
const groupA: string[] = [];
// Sent within the same time range: the filter's state leaves them out.
const sentDecoys: string[] = [];
let rangeStart: string;
let rangeEnd: string;
let templateName: string;

async function openMainBench(): Promise<void> {
  bench = await openBench('bulk_acts', closers);
  ({ database, sandbox, client, taskQueue, operator } = bench);
  workerLogin = await createOutsideLogin(database.db, database.connectionString, 'bulkworkers');
  closers.unshift(() => workerLogin!.drop());
  await database.db.query(`GRANT order_mail_worker TO ${workerLogin.user}`);
  operatorDb = createDatabase({
    connectionString: operator.connectionString,
    applicationName: 'bulk test ops',
  });
  closers.push(() => operatorDb!.close());

  rangeStart = await dbNow();
  for (let i = 0; i < 10; i += 1) sentDecoys.push(await createOrder(database.db));
  // Side by side, the decoys beside group A's runs: each its own order and run.
  const [failed] = await Promise.all([
    failedThenFixed(200),
    ...sentDecoys.map((orderId) =>
      client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }),
    ),
  ]);
  groupA.push(...failed);
  rangeEnd = await dbNow();
  // A refused address makes no request, so only the sent mails carry a template.
  const { rows } = await database.db.query<{ name: string; sha256: string }>(
    `SELECT DISTINCT template_name AS name, template_sha256 AS sha256 FROM order_mail_attempts WHERE order_id = $1`,
    [sentDecoys[0]],
  );
  templateName = `${rows[0]!.name}@${rows[0]!.sha256.slice(0, 12)}`;
}

/**
 * `check` for every order, 20 at a time: 200 orders' reads one after the other would take most of a test. A
 * window, not batches: the next order starts as soon as one ends, so no batch waits on its slowest.
 */
async function eachOf(orderIds: string[], check: (orderId: string) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < orderIds.length) await check(orderIds[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(20, orderIds.length) }, lane));
}

async function dbNow(on: Bench = bench): Promise<string> {
  const { rows } = await on.database.db.query<{ now: Date }>('SELECT clock_timestamp() AS now');
  return rows[0]!.now.toISOString();
}

/** `count` orders whose mail failed (rejected address), with the address then fixed; ascending ids. */
async function failedThenFixed(count: number, on: Bench = bench): Promise<string[]> {
  const { database, client, taskQueue } = on;
  const orderIds: string[] = [];
  for (let i = 0; i < count; i += 1) {
    orderIds.push(await createOrder(database.db, { customerEmail: 'not-an-address' }));
  }
  // 20 at a time: the machine is shared.
  await eachOf(orderIds, (orderId) =>
    client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] }).then(
      () => undefined,
      () => undefined,
    ),
  );
  await eachOf(orderIds, async (orderId) => {
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'rejected' });
  });
  await database.db.query(
    `UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = ANY($1::bigint[])`,
    [orderIds],
  );
  return orderIds;
}

function opsContext(): OpsContext {
  return {
    db: operatorDb!,
    client,
    namespace: inject('temporalNamespace'),
    taskQueue,
    uiBaseUrl: 'http://localhost:8233',
    operator: operator.user,
  };
}

async function ops(...argv: string[]) {
  return opsOn(bench, ...argv);
}

async function opsOn(on: Bench, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    argv,
    {
      OPS_DATABASE_URL: on.operator.connectionString,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: on.taskQueue,
    },
    { out: (text) => out.push(text), err: (text) => err.push(text) },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Everything a bulk act could change, for every order: rows, attempts, acts, runs, messages received. */
async function everything(orderIds: string[]) {
  const { rows: logRows } = await database.db.query(
    `SELECT to_jsonb(log) AS row FROM order_mail_log AS log ORDER BY order_id`,
  );
  const { rows: counts } = await database.db.query(
    `SELECT (SELECT count(*) FROM order_mail_attempts)::int AS attempts,
            (SELECT count(*) FROM order_mail_operator_acts)::int AS acts,
            (SELECT count(*) FROM order_mail_observed_resets)::int AS "observedResets"`,
  );
  const runs: Record<string, string> = {};
  await eachOf(orderIds, async (orderId) => {
    runs[orderId] = (await client.workflow.getHandle(orderId).describe()).runId;
  });
  return { logRows, counts: counts[0], runs, messages: sandbox.messages().length };
}

/** The acts written for a bulk act, by order. */
async function bulkActs(bulkId: string) {
  const { rows } = await database.db.query<{ orderId: string; act: string; operator: string; id: string }>(
    `SELECT order_id::text AS "orderId", act, operator, id::text AS id FROM order_mail_operator_acts
      WHERE reason LIKE $1 ORDER BY order_id, id`,
    [`bulk ${bulkId}: %`],
  );
  return rows;
}

const FILTER_A = () => [
  '--state',
  'failed',
  '--outcome',
  'rejected',
  '--since',
  rangeStart,
  '--until',
  rangeEnd,
];

let bulkA: string;

// The two describes run side by side (each suite concurrent with the other); the tests within the first one
// after the other, in order: each builds on the bulk acts and rows the ones before it left.
describe('acts on many orders', { concurrent: true }, () => {
  beforeAll(openMainBench, 600_000);
  afterAll(() => closeInReverse(closers));
  describe('one after the other', { concurrent: false }, () => {
    it('a dry run saves its selection (id and hash) and changes nothing else: rows, acts, workflows, sends', async () => {
      const before = await everything([...groupA, ...sentDecoys]);

      // 200 is above the default bound: refused, nothing saved, until the operator states the bound.
      const unbounded = await ops('bulk', 'retry', ...FILTER_A(), '--reason', 'address fixed', '--dry-run');
      expect(unbounded.code).toBe(1);
      const { rows: none } = await database.db.query(`SELECT count(*)::int AS n FROM order_mail_bulk_acts`);
      expect(none[0]).toEqual({ n: 0 });

      const dry = await ops(
        'bulk',
        'retry',
        ...FILTER_A(),
        '--reason',
        'address fixed',
        '--max',
        '200',
        '--dry-run',
        '--json',
      );
      expect(dry).toMatchObject({ code: 0, err: '' });
      const saved = JSON.parse(dry.out) as { bulk: { id: string }; orderIds: string[] };
      bulkA = saved.bulk.id;
      expect(saved.orderIds).toEqual(groupA);
      expect(await readBulkAct(database.db, bulkA)).toMatchObject({
        verb: 'retry',
        orderCount: 200,
        maxOrders: 200,
        selectionSha256: selectionHash(groupA),
        selectedBy: operator.user,
        startedAt: null,
      });
      const progress = await listBulkOrders(database.db, bulkA);
      expect(progress.map((order) => order.orderId)).toEqual(groupA);
      expect(new Set(progress.map((order) => order.status))).toEqual(new Set(['pending']));

      // By template (name and hash): the mails it rendered, here the sent ones of the range.
      const byTemplate = await ops(
        'bulk',
        'resolve',
        '--as',
        'failed',
        '--template',
        templateName,
        '--since',
        rangeStart,
        '--until',
        rangeEnd,
        '--reason',
        'wrong price',
        '--dry-run',
        '--json',
      );
      expect(byTemplate).toMatchObject({ code: 0, err: '' });
      expect((JSON.parse(byTemplate.out) as { orderIds: string[] }).orderIds).toEqual(sentDecoys);

      expect(await everything([...groupA, ...sentDecoys])).toEqual(before);
    });

    it('only operators write selections; the workers’ login may not', async () => {
      const workers = createDatabase({
        connectionString: workerLogin!.connectionString,
        applicationName: 'bulk test',
      });
      try {
        await expect(
          workers.query(
            `INSERT INTO order_mail_bulk_acts (verb, filter, reason, max_orders, order_count, selection_sha256)
           VALUES ('retry', '{}', 'x', 1, 0, repeat('0', 64))`,
          ),
        ).rejects.toMatchObject({ code: '42501' });
        await expect(
          workers.query(`UPDATE order_mail_bulk_act_orders SET status = 'done' WHERE bulk_id = $1`, [bulkA]),
        ).rejects.toMatchObject({ code: '42501' });
      } finally {
        await workers.close();
      }
    });

    it('a selection that changed between dry run and run is refused with the difference; asked again, it acts', async () => {
      const sinceB = await dbNow();
      const groupB = await failedThenFixed(3);
      const dry = await dryRunBulkAct(opsContext(), {
        verb: { verb: 'retry' },
        filter: {
          state: 'failed',
          outcome: null,
          since: sinceB,
          until: null,
          provider: null,
          template: null,
          templateSha256: null,
        },
        reason: 'address fixed',
      });
      expect(dry.orderIds).toEqual(groupB);
      // Meanwhile one of them is retried alone, and leaves the selection.
      await retryOrderMail(opsContext(), { orderId: groupB[0]!, reason: 'customer called' });
      expect(await client.workflow.getHandle(groupB[0]!).result()).toMatchObject({ result: 'sent' });
      const before = await everything(groupB);

      const refused = await runBulkAct(opsContext(), { id: dry.bulk.id }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SelectionChanged);
      expect(refused).toMatchObject({ added: [], removed: [groupB[0]] });
      expect((await ops('bulk', 'run', dry.bulk.id)).code).toBe(1);
      expect(await everything(groupB)).toEqual(before);
      expect(await bulkActs(dry.bulk.id)).toEqual([]);
      expect(await readBulkAct(database.db, dry.bulk.id)).toMatchObject({ startedAt: null });

      // Asked again: a new dry run of the same filter, and its id.
      const again = await dryRunBulkAct(opsContext(), {
        ...dry.bulk,
        verb: { verb: 'retry' },
        reason: 'address fixed',
      });
      expect(again.orderIds).toEqual(groupB.slice(1));
      const ran = await ops('bulk', 'run', again.bulk.id);
      expect(ran).toMatchObject({ code: 0, err: '' });
      expect((await bulkActs(again.bulk.id)).map((act) => act.orderId)).toEqual(groupB.slice(1));
      for (const orderId of groupB) {
        expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
        expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      }
    });

    it('an interrupted run resumed by its id acts on the rest only, never twice; acts, sends and rows match the selection', async () => {
      const decoysBefore = await everything(sentDecoys);
      const messagesBefore = sandbox.messages().length;
      const runsBefore: Record<string, string> = {};
      await eachOf(groupA, async (orderId) => {
        runsBefore[orderId] = (await client.workflow.getHandle(orderId).describe()).runId;
      });

      // Killed after 30 acts, between the 30th retry's reset (Temporal took it) and its commit (act and progress).
      const interrupted = await runBulkAct(opsContext(), {
        id: bulkA,
        hooks: {
          beforeCommit: (_orderId, acted) => {
            if (acted === 30) throw new Error('killed');
          },
        },
      }).catch((error: unknown) => error);
      expect(interrupted).toMatchObject({ message: 'killed' });
      const halfway = await listBulkOrders(database.db, bulkA);
      expect(halfway.filter((order) => order.status === 'done')).toHaveLength(29);
      expect(halfway.filter((order) => order.status === 'acting').map((order) => order.orderId)).toEqual([
        groupA[29],
      ]);
      expect(halfway.filter((order) => order.status === 'pending')).toHaveLength(170);
      expect(await bulkActs(bulkA)).toHaveLength(29);

      const resumed = await ops('bulk', 'run', bulkA);
      expect(resumed).toMatchObject({ code: 0, err: '' });

      // One act per selected order, under the operator's login, naming the run it started; one mail each.
      const acts = await bulkActs(bulkA);
      expect(acts.map((act) => act.orderId)).toEqual(groupA);
      const done = await listBulkOrders(database.db, bulkA);
      expect(done.map((order) => [order.orderId, order.status, order.actId])).toEqual(
        acts.map((act) => [act.orderId, 'done', act.id]),
      );
      await eachOf(groupA, async (orderId) => {
        const handle = client.workflow.getHandle(orderId);
        expect(await handle.result()).toMatchObject({ result: 'sent' });
        expect(sandbox.messagesFor(orderId)).toHaveLength(1);
        expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
        const orderActs = await listOperatorActs(database.db, orderId);
        expect(orderActs).toHaveLength(1);
        const { runId } = await handle.describe();
        expect(orderActs[0]).toMatchObject({
          act: 'retry',
          operator: operator.user,
          details: { reset: { previousRunId: runsBefore[orderId], newRunId: runId } },
        });
        // Sent again on the operator's request: the act says so, and no worker took it for a reset of its own.
        expect(await listObservedResets(database.db, orderId)).toEqual([]);
      });
      expect(sandbox.messages().length - messagesBefore).toBe(200);
      expect(await everything(sentDecoys)).toMatchObject({ runs: decoysBefore.runs });

      // Run once more: everything is done, nothing is acted on again.
      const third = await runBulkAct(opsContext(), { id: bulkA });
      expect(third).toMatchObject({ done: [], refused: [], before: 200 });
      expect(await bulkActs(bulkA)).toHaveLength(200);
    }, 600_000);

    it('an order its per-order act refuses is marked refused with the reason, changed in nothing, and the run goes on', async () => {
      const since = await dbNow();
      const failed = await failedThenFixed(2);
      const sent = await createOrder(database.db);
      await client.workflow.execute(orderConfirmationMail, { workflowId: sent, taskQueue, args: [sent] });
      const dry = await ops(
        'bulk',
        'retry',
        '--since',
        since,
        '--reason',
        'retry the last minutes',
        '--dry-run',
        '--json',
      );
      expect(dry).toMatchObject({ code: 0, err: '' });
      const { bulk, orderIds } = JSON.parse(dry.out) as { bulk: { id: string }; orderIds: string[] };
      expect(orderIds).toEqual([...failed, sent]);
      const sentRun = (await client.workflow.getHandle(sent).describe()).runId;

      // Two runs of one bulk act at once: the second is refused while the first holds it.
      await database.db.transaction(async (holder) => {
        await holder.query(`SELECT pg_advisory_xact_lock(hashtext('order_mail_bulk_acts'), $1::int)`, [
          Number(bulk.id),
        ]);
        await expect(runBulkAct(opsContext(), { id: bulk.id })).rejects.toMatchObject({
          code: 'BULK_ACT_RUNNING',
        });
      });
      expect(await bulkActs(bulk.id)).toEqual([]);

      const ran = await ops('bulk', 'run', bulk.id);
      expect(ran.code).toBe(1);
      const progress = await listBulkOrders(database.db, bulk.id);
      expect(progress.map((order) => [order.orderId, order.status])).toEqual([
        [failed[0], 'done'],
        [failed[1], 'done'],
        [sent, 'refused'],
      ]);
      expect(progress[2]!.refusal).toMatch(/^ALREADY_SENT/);
      expect((await bulkActs(bulk.id)).map((act) => act.orderId)).toEqual(failed);
      expect(await listOperatorActs(database.db, sent)).toEqual([]);
      expect((await client.workflow.getHandle(sent).describe()).runId).toBe(sentRun);
      expect(sandbox.messagesFor(sent)).toHaveLength(1);
      for (const orderId of failed) {
        expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
        expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      }
    });

    it('an interrupted bulk resolve is rolled back with its act, and done once on resume', async () => {
      const since = await dbNow();
      const groupC = await failedThenFixed(5);
      const dry = await dryRunBulkAct(opsContext(), {
        verb: { verb: 'resolve', as: 'sent' },
        filter: {
          state: 'failed',
          outcome: null,
          since,
          until: await dbNow(),
          provider: null,
          template: null,
          templateSha256: null,
        },
        reason: 'delivered by hand',
      });
      expect(dry.orderIds).toEqual(groupC);
      const messagesBefore = sandbox.messages().length;
      await expect(
        runBulkAct(opsContext(), {
          id: dry.bulk.id,
          hooks: {
            beforeCommit: (_orderId, acted) => {
              if (acted === 3) throw new Error('killed');
            },
          },
        }),
      ).rejects.toThrow('killed');
      expect(await bulkActs(dry.bulk.id)).toHaveLength(2);
      expect(await readMailLog(database.db, groupC[2]!)).toMatchObject({
        state: 'failed',
        outcome: 'rejected',
      });

      expect(await runBulkAct(opsContext(), { id: dry.bulk.id })).toMatchObject({
        done: groupC.slice(2),
        refused: [],
        before: 2,
      });
      expect((await bulkActs(dry.bulk.id)).map((act) => [act.orderId, act.act])).toEqual(
        groupC.map((orderId) => [orderId, 'resolve']),
      );
      for (const orderId of groupC) {
        expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'resolved' });
      }
      expect(sandbox.messages().length).toBe(messagesBefore);
    });
  });
});

describe('in an incident, with the hold', { concurrent: true }, () => {
  const incidentClosers: (() => Promise<void>)[] = [];
  let incident: Bench;
  beforeAll(async () => {
    incident = await openBench('bulk_incident', incidentClosers);
  }, 120_000);
  afterAll(() => closeInReverse(incidentClosers));

  it('hold, bulk retry, resume: the retried runs wait out the hold, then each order gets one mail', async ({
    expect,
  }) => {
    const { database, sandbox, client, operator } = incident;
    const since = await dbNow(incident);
    const orderIds = await failedThenFixed(3, incident);
    expect(await opsOn(incident, 'hold', '--reason', 'incident: wrong sender domain')).toMatchObject({
      code: 0,
      err: '',
    });
    const sendsAtHold = sandbox.requests().filter((request) => request.method === 'POST').length;
    try {
      const dry = await opsOn(
        incident,
        'bulk',
        'retry',
        '--state',
        'failed',
        '--since',
        since,
        '--reason',
        'domain fixed',
        '--dry-run',
        '--json',
      );
      expect(dry).toMatchObject({ code: 0, err: '' });
      const { bulk } = JSON.parse(dry.out) as { bulk: { id: string } };
      expect(await opsOn(incident, 'bulk', 'run', bulk.id)).toMatchObject({ code: 0, err: '' });
      for (const orderId of orderIds) {
        await waitFor(`order ${orderId} held`, async () => {
          const shown = (await client.workflow.getHandle(orderId).describe()).typedSearchAttributes.get(
            OrderMailState,
          );
          return shown === 'held' ? true : undefined;
        });
      }
      expect(sandbox.requests().filter((request) => request.method === 'POST').length).toBe(sendsAtHold);
    } finally {
      expect(await opsOn(incident, 'resume', '--reason', 'domain fixed', '--rate', '50')).toMatchObject({
        code: 0,
        err: '',
      });
    }
    for (const orderId of orderIds) {
      expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await listOperatorActs(database.db, orderId)).toMatchObject([
        { act: 'retry', operator: operator.user },
      ]);
    }
  });
});
