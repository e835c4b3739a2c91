// The Web UI's filters (docs/operating.md "Filters to paste" and "Each state") find every state of an
// order's mail, now that the start request gives the first state and the workflow upserts only what changes:
// real orders down each path on the dev server, and each filter run as a visibility query, as the Web UI does.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrderConfirmationMail } from '../../src/client';
import { workflowScopeOf } from '../../src/db/claimToken';
import { claimOrderMailRow } from '../../src/db/orderMailClaim';
import { resolveMailLog } from '../../src/db/operatorActs';
import { createGenericMailApiClient } from '../../dev/devtools/genericMailApiClient';
import type { MailTransport } from '../../src/mail/types';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { ORDER_MAIL_ATTRIBUTES_AT_START } from '../../src/shared/workflowContract';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  createOrder,
  openWorkflowTestBed,
  startTestWorker,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type WorkflowTestBed,
} from '../support/testKit';

let bed: WorkflowTestBed<'assume-sent'> | undefined;
let client: Client;
let slowRetry: RunningTestWorker;
let holding: RunningTestWorker;
let holdingMail: MailTransport;
const queues: string[] = [];
/** Order id of each scenario. */
const orders: Record<string, string> = {};

async function settle(orderId: string): Promise<void> {
  await client.workflow
    .getHandle(orderId)
    .result()
    .catch((error: unknown) => {
      if (!(error instanceof WorkflowFailedError)) throw error;
    });
}

beforeAll(async () => {
  bed = await openWorkflowTestBed('filters', ['assume-sent']);
  client = bed.client;
  const { database, sandbox, workers } = bed;
  const db = database.db;
  // A worker whose not-sent backoff is long, so a failed mail is seen waiting for its retry (Running).
  slowRetry = await startTestWorker({
    db,
    mail: bed.mail,
    settings: testSettings({ retryInitialIntervalMs: 600_000, retryMaxIntervalMs: 600_000 }),
  });
  // A worker whose mail client waits minutes for an answer, so a held send stays in flight (its run Running,
  // its row 'sending') for as long as the test needs, however slowly a loaded machine gets there.
  holdingMail = createGenericMailApiClient({
    baseUrl: sandbox.url,
    apiKey: 'sandbox-key',
    connectTimeoutMs: 1_000,
    headersTimeoutMs: 300_000,
    overallTimeoutMs: 300_000,
    connections: 4,
  });
  holding = await startTestWorker({
    db,
    mail: holdingMail,
    settings: testSettings({ sendTimeoutMs: 600_000 }),
  });
  const queue = workers['assume-sent'].taskQueue;
  queues.push(queue, slowRetry.taskQueue, holding.taskQueue);
  const start = async (name: string, fault?: Parameters<typeof sandbox.queueFault>[1], taskQueue = queue) => {
    const orderId = await createOrder(db);
    orders[name] = orderId;
    if (fault !== undefined) sandbox.queueFault(orderId, fault);
    await startOrderConfirmationMail(client, orderId, { taskQueue });
    return orderId;
  };

  await start('accepted');
  await start('rejected', { kind: 'status', status: 422 });
  await start('notSentThenAccepted', { kind: 'status', status: 429 });
  await start('unknown', { kind: 'accept-then-drop' });
  await start('failedWaiting', { kind: 'status', status: 429 }, slowRetry.taskQueue);
  await start('sendingHeld', { kind: 'accept-then-hang' }, holding.taskQueue);
  await start('terminatedMidSend', { kind: 'accept-then-hang' }, holding.taskQueue);
  // Started without the attributes (another client, `temporal workflow start`): its claim upserts them.
  const bare = await createOrder(db);
  orders.sendingHeldStartedBare = bare;
  sandbox.queueFault(bare, { kind: 'accept-then-hang' });
  await client.workflow.start(orderConfirmationMail, {
    workflowId: bare,
    taskQueue: holding.taskQueue,
    args: [bare],
  });
  // An order whose row an operator resolved as sent before this run: its claim finds it already sent.
  const resolved = await createOrder(db);
  orders.resolvedBefore = resolved;
  const claim = await claimOrderMailRow(db, {
    orderId: resolved,
    claimToken: `default/${resolved}/an-earlier-run`,
    workflowScope: workflowScopeOf('default', resolved),
    issuedAt: new Date(Date.now() - 60_000),
    policy: 'assume-sent',
    idempotency: null,
    sendTimeoutMs: 6_000,
    recordedBy: 'test',
  });
  expect(claim.kind).toBe('claimed');
  await resolveMailLog(db, {
    orderId: resolved,
    as: 'sent',
    reason: 'checked with the provider',
    seen: {
      state: 'sending',
      attempts: 1,
      claimToken: `default/${resolved}/an-earlier-run`,
      dispatched: false,
    },
  });
  await startOrderConfirmationMail(client, resolved, { taskQueue: queue });
  // An order that does not exist: the run fails before any claim, after a short wait for the order (its
  // default bound is minutes), started as the client starts it, with the first attributes.
  orders.notFound = String(Number(await createOrder(db)) + 500);
  await client.workflow.start(orderConfirmationMail, {
    workflowId: orders.notFound,
    taskQueue: queue,
    args: [orders.notFound, { orderVisibleWaitMs: 1_000 }],
    typedSearchAttributes: [...ORDER_MAIL_ATTRIBUTES_AT_START],
  });

  for (const name of [
    'accepted',
    'rejected',
    'notSentThenAccepted',
    'unknown',
    'resolvedBefore',
    'notFound',
  ]) {
    await settle(orders[name]!);
  }
  // The held sends are in flight once the sandbox holds their requests; one of them is then terminated.
  await waitFor('the held sends to reach the sandbox', async () =>
    ['sendingHeld', 'terminatedMidSend', 'sendingHeldStartedBare'].every((name) =>
      sandbox.requests().some((request) => request.orderId === orders[name]),
    )
      ? true
      : undefined,
  );
  await client.workflow.getHandle(orders.terminatedMidSend!).terminate('an operator ended it mid-send');
  await waitFor('the failed mail to wait for its retry', async () =>
    (
      await database.db.query(`SELECT 1 FROM order_mail_log WHERE order_id = $1 AND state = 'failed'`, [
        orders.failedWaiting,
      ])
    ).rowCount === 1
      ? true
      : undefined,
  );
}, 120_000);

afterAll(async () => {
  for (const name of ['sendingHeld', 'sendingHeldStartedBare', 'failedWaiting']) {
    await client?.workflow
      .getHandle(orders[name]!)
      .terminate('test over')
      .catch(() => undefined);
  }
  bed?.sandbox.releaseHeld();
  await slowRetry?.stop();
  await holding?.stop();
  await holdingMail?.close();
  await bed?.close();
});

/** The scenarios a filter lists, among this file's orders, once visibility has caught up with `expected`. */
async function listed(filter: string, expected: string[]): Promise<string[]> {
  const scope = queues.map((queue) => `TaskQueue="${queue}"`).join(' OR ');
  const byOrder = new Map(Object.entries(orders).map(([name, orderId]) => [orderId, name]));
  return waitFor(
    `visibility to list ${expected.join(', ')} for ${filter}`,
    async () => {
      const names: string[] = [];
      for await (const execution of client.workflow.list({ query: `(${scope}) AND (${filter})` })) {
        const name = byOrder.get(execution.workflowId);
        if (name !== undefined) names.push(name);
      }
      return expected.every((name) => names.includes(name)) ? names.sort() : undefined;
    },
    30_000,
  );
}

describe('the Web UI filters find each state', () => {
  // [filter, the scenarios it must list: exactly these]
  const FILTERS: [string, string[]][] = [
    ['OrderMailState="failed" AND ExecutionStatus="Failed"', ['rejected']],
    ['OrderMailState="failed"', ['failedWaiting', 'rejected']],
    ['OrderMailState="unknown"', ['unknown']],
    ['OrderMailHttpStatus=422', ['rejected']],
    ['OrderMailOutcome="rejected"', ['rejected']],
    ['OrderMailAttempts>1', ['notSentThenAccepted']],
    ['OrderMailOutcome="resolved"', ['resolvedBefore']],
    ['OrderMailState="sending" AND ExecutionStatus!="Running"', ['terminatedMidSend']],
    [
      'OrderMailState="sent" AND ExecutionStatus="Completed"',
      ['accepted', 'notSentThenAccepted', 'resolvedBefore'],
    ],
    ['OrderMailState="sending" AND ExecutionStatus="Running"', ['sendingHeld', 'sendingHeldStartedBare']],
    ['OrderMailState="failed" AND ExecutionStatus="Running"', ['failedWaiting']],
  ];
  for (const [filter, expected] of FILTERS) {
    it(`${filter}: ${expected.join(', ')}`, async () => {
      expect(await listed(filter, expected)).toEqual([...expected].sort());
    });
  }

  it('a run that never held a claim shows no state (not a stuck "sending")', async () => {
    const description = await client.workflow.getHandle(orders.notFound!).describe();
    expect(description.status.name).toBe('FAILED');
    expect(description.typedSearchAttributes.get(OrderMailState)).toBeUndefined();
  });
});
