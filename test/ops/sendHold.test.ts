// `npm run ops -- hold` / `resume` (docs/operating.md "Holding every send"), over a real Postgres, a real
// Temporal dev server and the HTTP sandbox: from hold's return no request reaches the provider until resume,
// held runs wait without spending attempts, resume gives every held order exactly one mail, hold waits for a
// request already in flight, a provider's hold holds only it, a hold survives a worker restart, and only an
// operator's login may set or lift one.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities';
import { main } from '../../src/cli/ops';
import { readMailLog } from '../../src/db/orderMailLog';
import { createDatabase } from '../../src/db/pool';
import type { MailTransport } from '../../src/mail/types';
import { readSendHoldGauges } from '../../src/db/sendHolds';
import { holdSends } from '../../src/ops/sendHold';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  connectTestClient,
  createOperatorLogin,
  createOrder,
  createOutsideLogin,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testProviderMailClient,
  testSettings,
  waitFor,
  type OutsideLogin,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';
import { ActivityHolds } from '../support/heldActivities';
import { testVerifier } from '../support/verificationKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let operator: OutsideLogin;
let workerLogin: OutsideLogin;
const transports: MailTransport[] = [];
const stops: (() => Promise<void>)[] = [];
const workers = {} as Record<'resend' | 'postmark' | 'verifying' | 'holding', RunningTestWorker>;
const activityHolds = new ActivityHolds();
// The sandbox indexes within 1 s by default; the verifying worker waits 1.5 s before it asks.
const VERIFY = { settleDelayMs: 1_500, lookupTimeoutMs: 800, deadlineMs: 3_000 };

async function startWorker(
  provider: 'resend' | 'postmark',
  taskQueue?: string,
  subject = 'ご注文ありがとうございます',
): Promise<RunningTestWorker> {
  const mail = testProviderMailClient(provider, sandbox.url);
  transports.push(mail);
  const running = await startTestWorker(
    {
      db: database.db,
      mail,
      settings: testSettings({ maxSendAttempts: 2 }),
      mailIdentity: { from: 'shop@example.com', replyTo: null, subject },
    },
    { taskQueue },
  );
  stops.push(() => running.stop());
  return running;
}

beforeAll(async () => {
  database = await openTestDatabase('send_hold');
  sandbox = await startMailSandbox();
  client = await connectTestClient();
  operator = await createOperatorLogin(database.db, database.connectionString, 'holder');
  workerLogin = await createOutsideLogin(database.db, database.connectionString, 'holdworkers');
  await database.db.query(`GRANT order_mail_worker TO ${workerLogin.user}`);
  workers.resend = await startWorker('resend');
  workers.postmark = await startWorker('postmark');
  const generic = testMailClient(sandbox.url);
  transports.push(generic);
  const verifier = testVerifier('generic', sandbox.url, { settings: VERIFY });
  stops.push(() => verifier.close());
  workers.verifying = await startTestWorker({
    db: database.db,
    mail: generic,
    settings: testSettings({ verification: VERIFY }),
    verifier: verifier.verifier,
  });
  stops.push(() => workers.verifying.stop());
  // Its record can be held back, to keep an attempt dispatched and unrecorded as long as a test needs.
  const holdingMail = testProviderMailClient('resend', sandbox.url);
  transports.push(holdingMail);
  const holdingDeps = {
    db: database.db,
    mail: holdingMail,
    settings: testSettings(),
    workerIdentity: 'send-hold-holding',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  workers.holding = await startTestWorker(holdingDeps, {
    activities: activityHolds.wrap(createActivities(holdingDeps)),
  });
  stops.push(() => workers.holding.stop());
}, 120_000);

afterAll(async () => {
  activityHolds.releaseAll();
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  for (const transport of transports) await transport.close();
  await client?.connection.close();
  await sandbox?.close();
  await database?.close();
  await operator?.drop();
  await workerLogin?.drop();
});

async function ops(login: OutsideLogin, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    argv,
    {
      OPS_DATABASE_URL: login.connectionString,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: workers.resend.taskQueue,
    },
    { out: (text) => out.push(text), err: (text) => err.push(text) },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Send requests the sandbox received (lookups are counted apart, by sandbox.lookups()). */
function sendRequests(provider?: 'resend' | 'postmark'): number {
  return sandbox
    .requests()
    .filter((request) => request.method === 'POST' && request.provider !== null)
    .filter((request) => provider === undefined || request.provider === provider).length;
}

async function start(worker: RunningTestWorker): Promise<string> {
  const orderId = await createOrder(database.db);
  await client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: worker.taskQueue,
    args: [orderId],
  });
  return orderId;
}

/** The run shows it waits out a hold: its row was refused at the fence and its search attribute says held. */
async function waitHeld(orderId: string): Promise<void> {
  await waitFor(`order ${orderId} held`, async () => {
    const shown = (await client.workflow.getHandle(orderId).describe()).typedSearchAttributes.get(
      OrderMailState,
    );
    return shown === 'held' ? true : undefined;
  });
}

async function mailedOnce(orderIds: string[]): Promise<void> {
  for (const orderId of orderIds) {
    expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  }
}

describe('a hold on every send', () => {
  it('from hold’s return no request reaches the provider until resume; then each held order gets one mail', async () => {
    const held = await ops(operator, 'hold', '--reason', 'wrong price in the template');
    expect(held).toMatchObject({ code: 0, err: '' });
    const requestsAtHold = sendRequests();
    const orderIds = [
      await start(workers.resend),
      await start(workers.postmark),
      await start(workers.resend),
    ];
    for (const orderId of orderIds) await waitHeld(orderId);
    expect(sendRequests()).toBe(requestsAtHold);
    for (const orderId of orderIds) {
      // Refused at the fence: recorded failed/not_sent, never dispatched; no attempt of the run was spent on it.
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'failed',
        outcome: 'not_sent',
        dispatchedAt: null,
      });
    }
    expect(sendRequests()).toBe(requestsAtHold);
    expect(await readSendHoldGauges(database.db)).toMatchObject([{ scope: '*', heldOrders: 3 }]);

    const resumed = await ops(operator, 'resume', '--reason', 'template fixed', '--rate', '50');
    expect(resumed).toMatchObject({ code: 0, err: '' });
    await mailedOnce(orderIds);
    const { rows: acts } = await database.db.query(
      `SELECT act, operator, reason, details->>'scope' AS scope FROM order_mail_operator_acts
        WHERE act IN ('hold', 'resume') ORDER BY id`,
    );
    expect(acts).toEqual([
      { act: 'hold', operator: operator.user, reason: 'wrong price in the template', scope: '*' },
      { act: 'resume', operator: operator.user, reason: 'template fixed', scope: '*' },
    ]);
  });

  it('a hold set while a request is in flight returns only once that attempt is recorded, or lists it', async () => {
    // The sandbox takes the request and holds its answer past the transport's 1 s headers deadline: in flight
    // until the send gives up on it and the record settles it (sent under assume-sent, whatever the answer).
    const slow = await createOrder(database.db);
    sandbox.queueFault(slow, { kind: 'accept-then-hang', ms: 1_500 });
    await client.workflow.start(orderConfirmationMail, {
      workflowId: slow,
      taskQueue: workers.resend.taskQueue,
      args: [slow],
    });
    await waitFor('the slow request dispatched', async () =>
      (await readMailLog(database.db, slow))?.dispatchedAt != null ? true : undefined,
    );
    try {
      const result = await holdSends(database.db, { scope: '*', reason: 'in flight' });
      expect(result.inFlight).toEqual([]);
      // Returned only after the in-flight attempt was recorded.
      expect(await readMailLog(database.db, slow)).toMatchObject({ state: 'sent' });
    } finally {
      await lift();
    }

    // Past the bound: an attempt dispatched and not recorded (its record held back) is listed, and the CLI
    // says it is not done.
    const slower = await createOrder(database.db);
    const record = activityHolds.holdAt(slower, 'record');
    await client.workflow.start(orderConfirmationMail, {
      workflowId: slower,
      taskQueue: workers.holding.taskQueue,
      args: [slower],
    });
    await waitFor('the slower attempt sent and its record held', async () =>
      record.entered ? true : undefined,
    );
    try {
      const bounded = await ops(operator, 'hold', '--reason', 'in flight, bounded', '--wait', '1');
      expect(bounded.code).toBe(1);
      expect(bounded.out).toContain(`order ${slower} attempt 1`);
    } finally {
      await lift();
      record.release();
    }
    for (const orderId of [slow, slower]) {
      await client.workflow.getHandle(orderId).result();
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }
  });

  it('with --provider holds only that provider', async () => {
    expect(
      await ops(operator, 'hold', '--provider', 'resend', '--reason', 'resend compromised'),
    ).toMatchObject({
      code: 0,
    });
    const resendAtHold = sendRequests('resend');
    const heldOrder = await start(workers.resend);
    const freeOrder = await start(workers.postmark);
    await mailedOnce([freeOrder]);
    await waitHeld(heldOrder);
    expect(sendRequests('resend')).toBe(resendAtHold);
    // Resuming every provider is refused: only resend is held.
    expect(await ops(operator, 'resume', '--reason', 'x')).toMatchObject({ code: 1 });
    expect(await ops(operator, 'resume', '--provider', 'resend', '--reason', 'key rotated')).toMatchObject({
      code: 0,
    });
    await mailedOnce([heldOrder]);
  });

  it('survives a worker restart: the new worker holds too; resume mails every held order once, as fixed meanwhile', async () => {
    const taskQueue = `hold-restart-${Date.now()}`;
    const first = await startWorker('resend', taskQueue, 'Wrong price');
    expect(await ops(operator, 'hold', '--reason', 'across a restart')).toMatchObject({ code: 0 });
    const requestsAtHold = sendRequests();
    const before = await start(first);
    await waitHeld(before);
    await first.stop();
    // The fix ships during the hold (here: the subject); the held mails are rendered at their send, by it.
    const second = await startWorker('resend', taskQueue, 'Fixed price');
    const after = await start(second);
    await waitHeld(after);
    expect(sendRequests()).toBe(requestsAtHold);
    expect(await ops(operator, 'resume', '--reason', 'restart done')).toMatchObject({ code: 0 });
    await mailedOnce([before, after]);
    for (const orderId of [before, after]) {
      expect(sandbox.messagesFor(orderId).map((message) => message.subject)).toEqual(['Fixed price']);
    }
  });

  it('lets verification lookups go on: an unknown outcome from before the hold is settled by the lookup', async () => {
    const orderId = await createOrder(database.db);
    // The provider takes the mail and drops the connection: unknown, then the lookup after the settle delay.
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: workers.verifying.taskQueue,
      args: [orderId],
    });
    await waitFor('the request dispatched', async () =>
      (await readMailLog(database.db, orderId))?.dispatchedAt != null ? true : undefined,
    );
    const lookupsBefore = sandbox.lookups().length;
    const held = await holdSends(database.db, { scope: '*', reason: 'during verification' });
    try {
      // hold waited for it: the lookup was made under the hold, and its answer (not the policy) settled it.
      expect(held.inFlight).toEqual([]);
      expect(sandbox.lookups().length).toBeGreaterThan(lookupsBefore);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        unknownPolicy: null,
      });
    } finally {
      await lift();
    }
    expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('a worker’s login can neither set nor lift a hold', async () => {
    const refused = await ops(workerLogin, 'hold', '--reason', 'taken over');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('NOT_AN_OPERATOR');
    const asWorker = createDatabase({
      connectionString: workerLogin.connectionString,
      applicationName: 'test',
    });
    try {
      await expect(
        asWorker.query(`INSERT INTO order_mail_send_holds (scope, reason) VALUES ('*', 'x')`),
      ).rejects.toMatchObject({ code: '42501' });
      await database.db.query(
        `INSERT INTO order_mail_send_holds (scope, reason) VALUES ('*', 'set by admin')`,
      );
      await expect(asWorker.query(`DELETE FROM order_mail_send_holds`)).rejects.toMatchObject({
        code: '42501',
      });
    } finally {
      await asWorker.close();
      await lift();
    }
  });
});

async function lift(): Promise<void> {
  await database.db.query(`DELETE FROM order_mail_send_holds`);
}
