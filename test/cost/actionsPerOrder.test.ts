// What one order costs on Temporal Cloud, guarded: one real order down each path (the dev server, Postgres, the
// sandbox, the worker code in-process), started as the order service starts it, its history counted by the
// rules of the pricing page (dev/bench/cost/historyCost.ts). A change that adds an Action to a path fails
// here; a change that removes one fails too, until its pin is lowered: both are decisions to make on purpose.
// `npm run bench` prints the same table, beside the floor's, against each server it runs.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createCardActivities } from '../../dev/bench/card/activities';
import { countHistoryCost } from '../../dev/bench/cost/historyCost';
import { runOrderPaths, type OrderPath, type PathRun } from '../../dev/bench/cost/orderPaths';
import type { BenchServer } from '../../dev/bench/environment';
import { SWITCHES, skipQuery, skipStatement, takeSkips } from '../../dev/bench/switches/skips';
import { cardVariant } from '../../dev/bench/variants';
import { ConfigError, loadConfig } from '../../src/config/loadConfig';
import { preparedStatementName, type Database } from '../../src/db/pool';
import { countProviderFailure, countProviderSuccess } from '../../src/db/providerHealth';
import { markDispatched, record } from '../../src/mailRow/statements';
import { historyToJson } from '../../dev/devtools/historyJson';
import { createSandboxControlClient } from '../../packages/sandbox/src/sandboxControlClient';
import { loadOrderForMail } from '../../src/db/orders';
import { renderConfirmationMail } from '../../src/mail/confirmationMail';
import { defaultMailTemplates } from '../../src/mail/template/mailTemplates';
import { createOrder, openWorkflowTestBed, type WorkflowTestBed } from '../support/testKit';

// Billable Actions per order, by path (docs/benchmarks.md, "What one order costs").
const PINNED_ACTIONS: Record<OrderPath, number> = {
  accepted: 5,
  rejected: 5,
  'not-sent-then-accepted': 11,
  unknown: 5,
};

let bed: WorkflowTestBed<'assume-sent'> | undefined;
let client: Client;
let runs: Map<OrderPath, PathRun>;

beforeAll(async () => {
  bed = await openWorkflowTestBed('actions', ['assume-sent']);
  client = bed.client;
  const { database, sandbox, workers } = bed;
  const done = await runOrderPaths({
    client,
    taskQueue: workers['assume-sent'].taskQueue,
    db: database.db,
    createOrder: () => createOrder(database.db),
    queueFault: async (orderId, fault) => sandbox.queueFault(orderId, fault),
    // The test bed's workers leave unknown outcomes to the policy: this pins the policy's path.
    verifies: false,
  });
  runs = new Map(done.map((run) => [run.path, run]));
});

afterAll(async () => {
  await bed?.close();
});

describe('Temporal Cloud Actions per order', () => {
  for (const path of Object.keys(PINNED_ACTIONS) as OrderPath[]) {
    it(`${path}: ${PINNED_ACTIONS[path]} Actions`, () => {
      const run = runs.get(path)!;
      // The run went down the path it was meant to (row, workflow status), or its count says nothing.
      expect(run.problems).toEqual([]);
      expect(run.cost.actions, `order ${run.orderId}: ${JSON.stringify(run.cost)}`).toBe(
        PINNED_ACTIONS[path],
      );
    });
  }
});

// The bench's card variant (dev/bench/card): the same check the bench runs after every phase, here against a
// worker in-process, and shown to report what it is there to catch.
describe('the card variant (npm run bench)', () => {
  const identity = { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' };

  it('mails every order once with one sent row, costs 4 Actions, and its check reports a second mail or a row not sent', async () => {
    const { database, sandbox, mail } = bed!;
    const db = database.db;
    const taskQueue = `bench-card-${randomUUID()}`;
    const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
    const controls = createSandboxControlClient(sandbox.url);
    try {
      const worker = await Worker.create({
        connection,
        namespace: inject('temporalNamespace'),
        taskQueue,
        workflowsPath: path.join(__dirname, '../../dev/bench/card/workflows.ts'),
        activities: createCardActivities({
          db,
          mail,
          mailIdentity: identity,
          mailTemplates: defaultMailTemplates(),
          sendTimeoutMs: 60_000,
        }),
      });
      const server: BenchServer = {
        name: 'dev',
        address: inject('temporalAddress'),
        namespace: inject('temporalNamespace'),
        pids: { temporalServer: null, temporalStore: null },
        describe: 'the test run’s dev server',
        storeCommits: null,
      };
      const prefix = `card-${randomUUID()}-`;
      const card = cardVariant(
        server,
        client,
        { pids: () => [], scaleTo: async () => undefined },
        taskQueue,
        prefix,
        db,
        controls,
      );
      await worker.runUntil(async () => {
        await controls.reset();
        const orderIds = await Promise.all(Array.from({ length: 4 }, () => createOrder(db)));
        const { recordedAtMs: recorded } = await card.openLoop(orderIds, Date.now(), 20, 60_000);
        expect([...recorded.keys()].sort()).toEqual([...orderIds].sort());
        expect(await card.verify(orderIds, recorded)).toEqual([]);
        // The row is written by the record step before the workflow task that ran it completes: wait for the
        // run's end, or the history may lack the record's marker on a busy machine.
        const handle = client.workflow.getHandle(`${prefix}${orderIds[0]}`);
        await handle.result();
        const history = historyToJson(await handle.fetchHistory());
        // Start, the send, the markers of two workflow tasks (claim; record): the floor-local's count.
        expect(countHistoryCost(history).actions).toBe(4);

        const [twice, notSent, fine] = await Promise.all(Array.from({ length: 3 }, () => createOrder(db)));
        const more = [twice!, notSent!, fine!];
        const { recordedAtMs: again } = await card.openLoop(more, Date.now(), 20, 60_000);
        const order = await loadOrderForMail(db, twice!);
        await mail.send(renderConfirmationMail(order!, identity));
        await db.query(
          `UPDATE order_mail_log SET state = 'failed', outcome = 'rejected' WHERE order_id = $1`,
          [notSent],
        );
        const problems = await card.verify(more, again);
        expect(problems).toHaveLength(2);
        expect(problems[0]).toMatch(/^card: 1 of 3 orders have no sent\/accepted row/);
        expect(problems[1]).toMatch(
          new RegExp(`^card: 1 of 3 orders did not get exactly one mail \\(e.g. ${twice}: 2\\)`),
        );
      });
    } finally {
      await controls.close();
      await connection.close();
    }
  });
});

// The bench's switches (dev/bench/switches) leave one extra out of the product's worker to price it: refused by
// the product itself, and each still finding the statement it leaves out.
describe('the bench switches (BENCH_SKIP_)', () => {
  const required = {
    DATABASE_URL: 'postgres://user:secret@db:5432/shop',
    MAIL_DEPLOYMENT_ID: 'test-deployment',
    MAIL_API_BASE_URL: 'https://mail.example.com/',
    MAIL_API_KEY: 'key-123',
  };

  it('the product refuses every switch, with the other problems', () => {
    for (const name of Object.values(SWITCHES)) {
      expect(() => loadConfig({ ...required, [name]: '1' }), name).toThrow(ConfigError);
      try {
        loadConfig({ ...required, DATABASE_URL: undefined, [name]: '1' });
      } catch (error) {
        expect((error as ConfigError).problems).toEqual([
          'DATABASE_URL is required.',
          expect.stringContaining(`${name} is a benchmark switch`),
        ]);
      }
    }
  });

  it("the bench's preload takes them out of the environment before the worker reads it", () => {
    const env: Record<string, string | undefined> = { ...required };
    for (const name of Object.values(SWITCHES)) env[name] = '/tmp/bundle.js';
    expect(takeSkips(env)).toEqual({
      fence: true,
      audit: true,
      searchAttributesBundle: '/tmp/bundle.js',
      logLines: true,
      healthSuccess: true,
      preparedStatements: true,
    });
    expect(() => loadConfig(env)).not.toThrow();
  });

  it('the fence and audit switches find their statements in src/mailRow/statements.ts', async () => {
    const texts: string[] = [];
    const capture = {
      query: async (text: string) => {
        texts.push(text);
        return { rows: [], rowCount: 0 };
      },
    } as unknown as Database;
    const attempt = { orderId: '1', claimToken: 'token', attempt: 1 };
    await markDispatched(capture, {
      ...attempt,
      provider: null,
      dispatch: {
        provider: null,
        origin: null,
        scope: null,
        credentialFingerprint: null,
        account: null,
        sendKey: 'key',
        sendTimeoutMs: 1,
        templateName: null,
        templateSha256: null,
      },
    });
    await record(capture, {
      ...attempt,
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: 202,
      error: null,
      recordedBy: 'test',
      expectDispatched: null,
    });
    const [fence, settle] = texts as [string, string];
    const none = { fence: false, audit: false };
    expect(skipStatement(fence, none)).toEqual({ text: fence });
    expect(skipStatement(settle, none)).toEqual({ text: settle });
    expect(skipStatement(fence, { fence: true, audit: false })).toEqual({
      answer: { rows: [], rowCount: 1 },
    });
    const noFence = skipStatement(settle, { fence: true, audit: false }) as { text: string };
    expect(noFence.text).toContain('SET dispatched_at = coalesce(log.dispatched_at, now()), state = $1');
    const noAudit = skipStatement(settle, { fence: false, audit: true }) as { text: string; params: number };
    // Its own parameter (recorded_by, $11) goes with the audit row; the other ten stay.
    expect(noAudit.params).toBe(10);
    expect(settle).toContain('INSERT INTO order_mail_attempts');
    expect(noAudit.text).not.toContain('order_mail_attempts');
    expect(noAudit.text).toMatch(/RETURNING log\.\*\s*\) SELECT state, outcome FROM settled$/);
  });

  it("the health switch finds the count's success UPDATE and leaves the failure count alone", async () => {
    const texts: string[] = [];
    const capture = {
      query: async (text: string) => {
        texts.push(text);
        return { rows: [{ consecutiveFailures: 1, skipped: false }], rowCount: 1 };
      },
    } as unknown as Database;
    await countProviderSuccess(capture, 'mailgun');
    await countProviderFailure(capture, {
      provider: 'mailgun',
      failure: '503',
      settings: { skipAfterFailures: 3, skipForMs: 60_000 },
    });
    const [success, failure] = texts as [string, string];
    const skips = { fence: false, audit: false, healthSuccess: true };
    expect(skipStatement(success, skips)).toEqual({ answer: { rows: [], rowCount: 0 } });
    expect(skipStatement(failure, skips)).toEqual({ text: failure });
    expect(skipStatement(success, { fence: false, audit: false })).toEqual({ text: success });
  });

  it('the statement switches apply to named statements too (PG_PREPARED_STATEMENTS, the default)', async () => {
    const texts: string[] = [];
    const capture = {
      query: async (text: string) => {
        texts.push(text);
        return { rows: [], rowCount: 0 };
      },
    } as unknown as Database;
    await countProviderSuccess(capture, 'mailgun');
    const [success] = texts as [string];
    const named = { name: preparedStatementName(success), text: success, values: ['mailgun'] };
    expect(skipQuery([named], { fence: false, audit: false, healthSuccess: true })).toEqual({
      answer: { rows: [], rowCount: 0 },
    });
    expect(skipQuery([named], { fence: false, audit: false })).toEqual({ args: [named] });
    expect(skipQuery([success, ['mailgun']], { fence: false, audit: false, healthSuccess: true })).toEqual({
      answer: { rows: [], rowCount: 0 },
    });
    // A rewritten text goes under a name of its own, with the values it still has.
    await record(capture, {
      orderId: '1',
      claimToken: 'token',
      attempt: 1,
      state: 'sent',
      outcome: 'accepted',
      unknownPolicy: null,
      providerMessageId: null,
      httpStatus: 202,
      error: null,
      recordedBy: 'test',
      expectDispatched: null,
    });
    const settle = texts[1]!;
    const values = Array.from({ length: 11 }, (_, index) => index);
    const rewritten = skipQuery([{ name: preparedStatementName(settle), text: settle, values }], {
      fence: false,
      audit: true,
    }) as { args: [{ name: string; text: string; values: unknown[] }] };
    expect(rewritten.args[0].text).not.toContain('order_mail_attempts');
    expect(rewritten.args[0].name).toBe(preparedStatementName(rewritten.args[0].text));
    expect(rewritten.args[0].name).not.toBe(preparedStatementName(settle));
    expect(rewritten.args[0].values).toEqual(values.slice(0, 10));
  });
});
