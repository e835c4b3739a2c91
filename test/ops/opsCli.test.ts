// The operator CLI against the real server and database: its argument parsing (main(argv) as the npm script
// calls it), its refusals, and what status / list / retry / resolve do to the log row, the audit table, the
// workflow and the messages the sandbox received.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities } from '../../src/activities';
import { main } from '../../src/cli/ops';
import { listOperatorActs, resolveMailLog } from '../../src/db/operatorActs';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import type { OrderMailStatus } from '../../src/ops/orderMailStatus';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { getFreePort } from '../../src/shared/freePort';
import { OrderMailState } from '../../src/shared/orderMailSearchAttributes';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOperatorLogin,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type OutsideLogin,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const UI = 'http://ui.example:8233';
// A send held in flight (accept-then-hang) stays in flight while the test runs the CLI against it: the
// transport's deadlines are 20 s, not the test kit's 3 s, which a loaded machine outran (issue 38).
const SETTINGS = testSettings({ sendTimeoutMs: 30_000 });
let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;
let env: Record<string, string>;
/** The operator's own login the CLI runs as (OPS_DATABASE_URL), and the login the test itself writes with. */
let operator: OutsideLogin;
let adminLogin: string;

beforeAll(async () => {
  database = await openTestDatabase('ops_cli');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url, 'sandbox-key', { headersTimeoutMs: 20_000, overallTimeoutMs: 20_000 });
  client = await connectTestClient();
  worker = await startTestWorker({ db: database.db, mail, settings: SETTINGS });
  operator = await createOperatorLogin(database.db, database.connectionString, 'alice');
  adminLogin = (await database.db.query<{ login: string }>('SELECT session_user AS login')).rows[0]!.login;
  env = {
    OPS_DATABASE_URL: operator.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: worker.taskQueue,
    TEMPORAL_UI_URL: UI,
    // Read no more: the act names the login, whoever this says it is.
    OPERATOR: 'mallory',
  };
});

afterAll(async () => {
  await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
  await operator?.drop();
});

async function ops(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, env, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function opsWith(overrides: Record<string, string>, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    argv,
    { ...env, ...overrides },
    { out: (text) => out.push(text), err: (text) => err.push(text) },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function opsJson<T>(...argv: string[]): Promise<T> {
  const { code, out, err } = await ops(...argv, '--json');
  expect(err).toBe('');
  expect(code).toBe(0);
  return JSON.parse(out) as T;
}

async function mailOf(orderId: string, fault?: Parameters<MailSandbox['queueFault']>[1]) {
  if (fault) sandbox.queueFault(orderId, fault);
  return client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: worker.taskQueue,
    args: [orderId],
  });
}

async function sentOrder() {
  const orderId = await createOrder(database.db);
  await (await mailOf(orderId)).result();
  return orderId;
}

async function rejectedOrder() {
  const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
  await (await mailOf(orderId)).result().catch(() => undefined);
  return orderId;
}

async function unknownOrder() {
  const orderId = await createOrder(database.db);
  await (await mailOf(orderId, { kind: 'accept-then-drop' })).result();
  return orderId;
}

async function currentRunId(orderId: string) {
  return (await client.workflow.getHandle(orderId).describe()).runId;
}

describe('arguments', { concurrent: true }, () => {
  it('refuses bad arguments with exit code 2 and the usage, touching nothing', async ({ expect }) => {
    const orderId = await sentOrder();
    for (const argv of [
      ['frobnicate'],
      ['status'],
      ['status', 'abc'],
      ['status', '1', '2'],
      ['status', orderId, '--bogus'],
      ['list'],
      ['list', '--state', 'lost'],
      ['list', '--state', 'failed', '--since', 'yesterday'],
      ['list', '--state', 'failed', '--limit', '0'],
      ['retry', orderId],
      ['retry', orderId, '--reason', '   '],
      ['resolve', orderId, '--reason', 'checked'],
      ['resolve', orderId, '--as', 'maybe', '--reason', 'checked'],
    ]) {
      const { code, err } = await ops(...argv);
      expect({ argv, code }).toEqual({ argv, code: 2 });
      expect(err).toContain('Usage: npm run ops');
    }
    const { err } = await ops('resolve', orderId, '--as', 'failed');
    expect(err).toContain('resolve needs --reason');
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'accepted' });
  });

  it('refuses an unknown order with exit code 1, for every command', async ({ expect }) => {
    const missing = '8000000000000001';
    for (const argv of [
      ['status', missing],
      ['retry', missing, '--reason', 'customer asked'],
      ['resolve', missing, '--as', 'sent', '--reason', 'customer asked'],
    ]) {
      const { code, err } = await ops(...argv);
      expect(code).toBe(1);
      expect(err).toContain(`Order ${missing} does not exist`);
    }
  });
});

describe('unreachable dependencies', { concurrent: true }, () => {
  it('a Postgres that does not answer: the error names its address and OPS_DATABASE_URL, never the password', async ({
    expect,
  }) => {
    const port = await getFreePort();
    const { code, err } = await opsWith(
      { OPS_DATABASE_URL: `postgres://ops:hunter2-secret@127.0.0.1:${port}/shop` },
      'status',
      '1',
    );
    expect(code).toBe(1);
    expect(err).toContain(`Cannot reach Postgres at 127.0.0.1:${port}/shop (OPS_DATABASE_URL)`);
    expect(err).not.toContain('hunter2');
  });
});

describe('status', { concurrent: true }, () => {
  it('shows the row, the attempts, the workflow, what the UI shows and the link', async ({ expect }) => {
    const orderId = await sentOrder();
    const runId = await currentRunId(orderId);
    const status = await opsJson<OrderMailStatus>('status', orderId);
    expect(status.row).toMatchObject({ orderId, state: 'sent', outcome: 'accepted', attempts: 1 });
    expect(status.attempts).toHaveLength(1);
    expect(status.workflow).toMatchObject({
      runId,
      status: 'COMPLETED',
      searchAttributes: { OrderMailState: 'sent', OrderMailAttempts: 1, OrderMailHttpStatus: 202 },
    });
    expect(status.uiUrl).toBe(
      `${UI}/namespaces/${inject('temporalNamespace')}/workflows/${orderId}/${runId}/history`,
    );

    const text = await ops('status', orderId);
    expect(text.code).toBe(0);
    expect(text.out).toContain(`Order ${orderId}`);
    expect(text.out).toContain(status.uiUrl);
  });

  it("an order not in orders whose run exists (started before the order's commit): its run, and why", async ({
    expect,
  }) => {
    const missing = '8000000000000002';
    const handle = await mailOf(missing);
    try {
      const status = await opsJson<OrderMailStatus>('status', missing);
      expect(status.row).toBeNull();
      expect(status.workflow).toMatchObject({ runId: handle.firstExecutionRunId, status: 'RUNNING' });
      expect(status.nextStep).toMatch(/not in orders/);
    } finally {
      await handle.terminate('test over');
    }
  });
});

describe('list', { concurrent: true }, () => {
  it('lists failed and unknown rows, newest first, with --since and --limit', async ({ expect }) => {
    const failed = await rejectedOrder();
    const unknown = await unknownOrder();
    const sent = await sentOrder();

    const failedList = await opsJson<{ row: { orderId: string } }[]>('list', '--state', 'failed');
    expect(failedList.map((entry) => entry.row.orderId)).toContain(failed);
    expect(failedList.map((entry) => entry.row.orderId)).not.toContain(sent);
    const unknownList = await opsJson<{ row: { orderId: string; state: string } }[]>(
      'list',
      '--state',
      'unknown',
    );
    expect(unknownList.map((entry) => entry.row.orderId)).toContain(unknown);
    expect(unknownList.map((entry) => entry.row.orderId)).not.toContain(failed);

    const limited = await opsJson<unknown[]>('list', '--state', 'sent', '--limit', '1');
    expect(limited).toHaveLength(1);
    const future = await opsJson<unknown[]>('list', '--state', 'failed', '--since', '2999-01-01T00:00Z');
    expect(future).toEqual([]);
    const recent = await opsJson<{ row: { orderId: string } }[]>(
      'list',
      '--state',
      'failed',
      '--since',
      '1h',
    );
    expect(recent.map((entry) => entry.row.orderId)).toContain(failed);
  });
});

describe('retry', { concurrent: true }, () => {
  it('of a sent order is refused, with the explanation and the resolve path; nothing changes', async ({
    expect,
  }) => {
    const orderId = await sentOrder();
    const runId = await currentRunId(orderId);
    const { code, err } = await ops('retry', orderId, '--reason', 'customer says no mail');
    expect(code).toBe(1);
    expect(err).toContain('ALREADY_SENT');
    expect(err).toContain(`npm run ops -- resolve ${orderId} --as failed`);
    expect(await currentRunId(orderId)).toBe(runId);
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('of a failed order after the fix: resets the workflow, one message, an audit row', async ({
    expect,
  }) => {
    const orderId = await rejectedOrder();
    const oldRunId = await currentRunId(orderId);
    await database.db.query(`UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = $1`, [
      orderId,
    ]);

    const { code, out } = await ops('retry', orderId, '--reason', 'address corrected (ticket 42)');
    expect(code).toBe(0);
    expect(out).toContain('reset run');
    const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
    expect(result).toMatchObject({ result: 'sent', attempts: 2 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', attempts: 2 });

    const [act] = await listOperatorActs(database.db, orderId);
    expect(act).toMatchObject({
      act: 'retry',
      operator: operator.user,
      reason: 'address corrected (ticket 42)',
      rowBefore: { state: 'failed', outcome: 'rejected', attempts: 1 },
      details: { reset: { previousRunId: oldRunId, previousStatus: 'FAILED' } },
    });
    expect(act!.details).toMatchObject({ reset: { newRunId: await currentRunId(orderId) } });
  });
});

describe('resolve', { concurrent: true }, () => {
  it('settles an unknown as sent: outcome resolved, an audit row with before and after', async ({
    expect,
  }) => {
    const orderId = await unknownOrder();
    const { code, out } = await ops(
      'resolve',
      orderId,
      '--as',
      'sent',
      '--reason',
      'provider log shows delivery',
    );
    expect(code).toBe(0);
    expect(out).toContain(`resolve by ${operator.user}`);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', outcome: 'resolved' });
    expect(await listOperatorActs(database.db, orderId)).toMatchObject([
      {
        act: 'resolve',
        operator: operator.user,
        reason: 'provider log shows delivery',
        rowBefore: { state: 'sent', outcome: 'unknown', unknown_policy: 'assume-sent' },
        rowAfter: { state: 'sent', outcome: 'resolved' },
      },
    ]);
    const unknownList = await opsJson<{ row: { orderId: string } }[]>('list', '--state', 'unknown');
    expect(unknownList.map((entry) => entry.row.orderId)).not.toContain(orderId);
    // Nothing to resolve on a mail the provider accepted.
    const accepted = await sentOrder();
    const refused = await ops('resolve', accepted, '--as', 'sent', '--reason', 'just checking');
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('ALREADY_SENT');
  });

  it('is the only way to move a sent row: resolve as failed, then retry sends one more mail', async ({
    expect,
  }) => {
    const orderId = await sentOrder();
    await database.db.query(`UPDATE orders SET customer_email = 'new-address@example.com' WHERE id = $1`, [
      orderId,
    ]);
    expect((await ops('resolve', orderId, '--as', 'failed', '--reason', 'sent to an old address')).code).toBe(
      0,
    );
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'resolved' });

    expect((await ops('retry', orderId, '--reason', 'send to the new address')).code).toBe(0);
    const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(sandbox.messagesFor(orderId).map((message) => message.to)).toEqual([
      expect.stringMatching(/^customer\d+@example\.com$/),
      'new-address@example.com',
    ]);
    expect((await listOperatorActs(database.db, orderId)).map((act) => act.act)).toEqual([
      'resolve',
      'retry',
    ]);
  });

  it('of an order that never got a row is refused', async ({ expect }) => {
    const orderId = await createOrder(database.db);
    const { code, err } = await ops('resolve', orderId, '--as', 'sent', '--reason', 'mailed by hand');
    expect(code).toBe(1);
    expect(err).toContain('NO_MAIL_LOG_ROW');
    expect(await readMailLog(database.db, orderId)).toBeNull();
  });
});

// Every describe runs beside the others (issue 38): each test its own orders, its faults queued for them alone,
// and it asserts on those orders' rows, acts, runs and messages only (the lists by what its own orders are
// in). The two below stay one after the other: sandbox.releaseHeld() lets every held answer go.
describe('resolve while a send is in flight', { concurrent: true }, () => {
  describe('one after the other', { concurrent: false }, () => {
    it('dispatched: retry and resolve are both refused; the send settles by itself, recorded truthfully', async ({
      expect,
    }) => {
      const orderId = await createOrder(database.db);
      const handle = await mailOf(orderId, { kind: 'accept-then-hang' });
      await waitFor('the send to be dispatched', async () =>
        (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
      );

      const sending = await opsJson<{ row: { orderId: string }; workflowStatus: string }[]>(
        'list',
        '--state',
        'sending',
      );
      expect(sending.find((entry) => entry.row.orderId === orderId)?.workflowStatus).toBe('RUNNING');

      const before = await readMailLog(database.db, orderId);
      const retry = await ops('retry', orderId, '--reason', 'impatient');
      expect(retry.code).toBe(1);
      expect(retry.err).toContain('SEND_IN_FLIGHT');
      const resolve = await ops(
        'resolve',
        orderId,
        '--as',
        'failed',
        '--reason',
        'customer says nothing came',
      );
      expect(resolve.code).toBe(1);
      expect(resolve.err).toContain('SEND_IN_FLIGHT');
      expect(await readMailLog(database.db, orderId)).toEqual(before);
      expect(await listOperatorActs(database.db, orderId)).toEqual([]);

      sandbox.releaseHeld();
      const result = await handle.result();
      const [message] = sandbox.messagesFor(orderId);
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', providerMessageId: message!.id });
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        providerMessageId: message!.id,
      });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    });

    it('a record that finds its claim lost keeps the accepted mail’s message id: audit trail and result', async ({
      expect,
    }) => {
      const orderId = await createOrder(database.db);
      const handle = await mailOf(orderId, { kind: 'accept-then-hang' });
      await waitFor('the send to be dispatched', async () =>
        (await readMailLog(database.db, orderId))?.dispatchedAt ? true : undefined,
      );
      // The row moved under the dispatched send without the CLI's refusal: the resolve statement on its own,
      // as it ran before the refusal existed (or as a DBA would).
      const row = (await readMailLog(database.db, orderId))!;
      const act = await resolveMailLog(database.db, {
        orderId,
        as: 'sent',
        reason: 'moved by hand',
        seen: { state: row.state, attempts: row.attempts, claimToken: row.claimToken, dispatched: true },
      });
      expect(act).not.toBeNull();
      const resolved = await readMailLog(database.db, orderId);
      sandbox.releaseHeld();
      const result = await handle.result();

      const [message] = sandbox.messagesFor(orderId);
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(result).toMatchObject({ result: 'claim-lost', providerMessageId: message!.id });
      expect(result.explanation).toContain(message!.id);
      // The row stays as the resolve left it: the record does not write over someone else's row.
      expect(await readMailLog(database.db, orderId)).toEqual(resolved);
      expect(resolved).toMatchObject({ state: 'sent', outcome: 'resolved', attempts: 1 });
      // The attempt's audit row is the resolve's, once, and it keeps the provider's late answer.
      expect(await listAttempts(database.db, orderId)).toMatchObject([
        {
          attempt: 1,
          state: 'sent',
          outcome: 'unknown',
          recordedBy: `operator:${adminLogin}`,
          late: { outcome: 'accepted', providerMessageId: message!.id, httpStatus: 202 },
        },
      ]);
      expect((await handle.describe()).typedSearchAttributes.get(OrderMailState)).toBe('sent');
    });

    it('not yet dispatched: resolve as failed, the send makes no request, then retry sends once', async ({
      expect,
    }) => {
      const orderId = await createOrder(database.db);
      const deps = {
        db: database.db,
        mail,
        settings: SETTINGS,
        workerIdentity: 'stalled-before-fence',
        mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
      };
      const real = createActivities(deps);
      let releaseSend!: () => void;
      const sendReleased = new Promise<void>((resolve) => (releaseSend = resolve));
      let held = false;
      const stalled = await startTestWorker(deps, {
        activities: {
          ...real,
          sendOrderMail: async (input: Parameters<typeof real.sendOrderMail>[0]) => {
            held = true;
            await sendReleased;
            return real.sendOrderMail(input);
          },
        },
      });
      try {
        const handle = await client.workflow.start(orderConfirmationMail, {
          workflowId: orderId,
          taskQueue: stalled.taskQueue,
          args: [orderId],
        });
        await waitFor('the send to be under way', async () => (held ? true : undefined));
        expect(
          (await ops('resolve', orderId, '--as', 'failed', '--reason', 'will fix and resend')).code,
        ).toBe(0);
        releaseSend();
        expect(await handle.result()).toMatchObject({ result: 'claim-lost', outcome: 'resolved' });
        expect((await handle.describe()).typedSearchAttributes.get(OrderMailState)).toBe('failed');
      } finally {
        await stalled.stop();
      }
      expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(0);
      expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', outcome: 'resolved' });
      expect(await listAttempts(database.db, orderId)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent' },
      ]);

      // A reset keeps the run's task queue: a worker polls it again, this time without the stall.
      const resumed = await startTestWorker(deps, { taskQueue: stalled.taskQueue });
      try {
        expect((await ops('retry', orderId, '--reason', 'resend after resolve')).code).toBe(0);
        const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
        expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
      } finally {
        await resumed.stop();
      }
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    });
  });
});
