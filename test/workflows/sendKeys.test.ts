// Resend's idempotency key over whole workflows, against the sandbox's Resend emulation (which forgets a key
// after its window, as Resend does): the key changes only on an operator's deliberate re-send; a 409
// invalid_idempotent_request is evidence of an earlier send; and a reclaim after an unknown outcome that was
// left for a retry under the key applies the policy once the key's window is past, instead of sending again.
// The window is 30 s here (Resend's is 24 h), so "a day later" is a real wait on Postgres's clock. The order
// retried inside it reaches its retry some 10 s after its first request, more on a loaded machine: at 15 s, a CI
// run under a load of 12 saw its window pass first.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import { DEFAULT_DEPLOYMENT_ID } from '../../src/evidence/messageIdentity';
import { orderConfirmationSendKey } from '../../src/mail/sendKey';
import type { MailTransport } from '../../src/mail/types';
import type { OpsContext } from '../../src/ops/opsContext';
import { resolveOrderMail } from '../../src/ops/resolveOrderMail';
import { retryOrderMail } from '../../src/ops/retryOrderMail';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const WINDOW_MS = 30_000;

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
const workers = {} as Record<UnknownOutcomePolicy, RunningTestWorker>;
/** Orders brought to "unknown, then gave up" in beforeAll: one for inside the key's window, two for past it. */
const gaveUp = {} as Record<'inside' | UnknownOutcomePolicy, string>;

beforeAll(async () => {
  database = await openTestDatabase('idempotency_keys');
  sandbox = await startMailSandbox({ idempotencyWindowMs: WINDOW_MS });
  mail = testProviderMailClient('resend', sandbox.url);
  client = await connectTestClient();
  for (const policy of ['assume-sent', 'assume-failed'] as const) {
    workers[policy] = await startTestWorker({
      db: database.db,
      mail,
      settings: testSettings({
        unknownOutcomePolicy: policy,
        idempotency: { windowMs: WINDOW_MS, safetyMarginMs: 0 },
        // Two attempts a run, four seconds apart: time for the test to act between them, for three runs at once.
        maxSendAttempts: 2,
        retryInitialIntervalMs: 4_000,
        retryMaxIntervalMs: 4_000,
      }),
    });
  }
  // Together, before any test runs: the sandbox's refusal is for every order, so one refusal serves all three,
  // and the windows of the two past-window orders run out side by side (one wait, not one each).
  const [inside, sent, failed] = await unknownThenGaveUp(['assume-sent', 'assume-sent', 'assume-failed']);
  Object.assign(gaveUp, { inside, 'assume-sent': sent, 'assume-failed': failed });
}, 120_000);

afterAll(async () => {
  for (const worker of Object.values(workers)) await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

function opsContext(policy: UnknownOutcomePolicy): OpsContext {
  return {
    db: database.db,
    client,
    namespace: inject('temporalNamespace'),
    taskQueue: workers[policy].taskQueue,
    uiBaseUrl: 'http://ui.example',
    operator: 'alice',
  };
}

function start(orderId: string, policy: UnknownOutcomePolicy) {
  return client.workflow.start(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue: workers[policy].taskQueue,
    args: [orderId],
  });
}

function requestsOf(orderId: string) {
  return sandbox.requests().filter((request) => request.orderId === orderId);
}

/**
 * Attempt 1 of each run is accepted and its answer lost (unknown, left for a retry under the key); attempt 2
 * cannot connect (not sent), and each run gives up with the row failed. The provider holds one message each.
 */
async function unknownThenGaveUp(policies: UnknownOutcomePolicy[]): Promise<string[]> {
  const runs = await Promise.all(
    policies.map(async (policy) => {
      const orderId = await createOrder(database.db);
      sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
      return { orderId, handle: await start(orderId, policy) };
    }),
  );
  await waitFor('attempt 1 of each run to be left for a retry under the key', async () => {
    for (const { orderId } of runs) {
      const row = await readMailLog(database.db, orderId);
      if (row?.unknownPolicy !== 'idempotent-retry') return undefined;
    }
    return true;
  });
  await sandbox.refuseConnectionsFor(6_000);
  for (const { handle } of runs) {
    await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'MailNotSentGaveUp' } });
  }
  await sandbox.whenListening();
  for (const { orderId } of runs) {
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'not_sent',
      attempts: 2,
    });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  }
  return runs.map(({ orderId }) => orderId);
}

async function keyWindowPassed(orderId: string): Promise<void> {
  await waitFor(
    "the key's window to pass",
    async () => {
      // On Postgres's clock, as the claim reads it: since the first request of the order's attempts.
      const { rows } = await database.db.query<{ sinceMs: number }>(
        `SELECT extract(epoch FROM now() - min(dispatched_at)) * 1000 AS "sinceMs"
           FROM order_mail_attempts WHERE order_id = $1`,
        [orderId],
      );
      return Number(rows[0]?.sinceMs) > WINDOW_MS ? true : undefined;
    },
    WINDOW_MS + 20_000,
  );
}

// Every test has its own order (and no refusal happens once beforeAll is done): they run side by side.
describe.concurrent('a reclaim after an unknown outcome left for a retry under the key', () => {
  it('inside the window: sends under the same key, and the provider answers from its store: one message', async () => {
    const orderId = gaveUp.inside;
    await retryOrderMail(opsContext('assume-sent'), { orderId, reason: 'connection fixed' });
    const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();
    const [message] = sandbox.messagesFor(orderId);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', providerMessageId: message!.id });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(requestsOf(orderId).at(-1)).toMatchObject({ replayed: true });
  }, 60_000);
});

describe.concurrent(
  'a reclaim after an unknown outcome left for a retry under the key, past the window',
  () => {
    it('past the window, assume-sent: the policy settles it, no request, no second mail', async () => {
      const orderId = gaveUp['assume-sent'];
      await keyWindowPassed(orderId);
      const requestsBefore = requestsOf(orderId).length;

      await retryOrderMail(opsContext('assume-sent'), { orderId, reason: 'a day later' });
      const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();

      expect(result).toMatchObject({ result: 'already-sent', outcome: 'unknown' });
      expect(requestsOf(orderId)).toHaveLength(requestsBefore);
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
      expect(await readMailLog(database.db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'unknown',
        unknownPolicy: 'assume-sent',
        attempts: 3,
      });
      const attempts = await listAttempts(database.db, orderId);
      expect(attempts.map((attempt) => [attempt.outcome, attempt.unknownPolicy])).toEqual([
        ['unknown', 'idempotent-retry'],
        ['not_sent', null],
        ['unknown', 'assume-sent'],
      ]);
      expect(attempts[2]).toMatchObject({ dispatchedAt: null, state: 'sent' });
      expect(attempts[2]!.error).toContain('no request made by this attempt');
    }, 90_000);

    it('past the window, assume-failed: the policy says send again, and the log says so', async () => {
      const orderId = gaveUp['assume-failed'];
      await keyWindowPassed(orderId);

      await retryOrderMail(opsContext('assume-failed'), { orderId, reason: 'a day later' });
      const result = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();

      // The policy trades a possible duplicate for never losing a mail; the first one did arrive here.
      expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 4 });
      expect(sandbox.messagesFor(orderId)).toHaveLength(2);
      expect(
        (await listAttempts(database.db, orderId)).map((attempt) => [attempt.outcome, attempt.unknownPolicy]),
      ).toEqual([
        ['unknown', 'idempotent-retry'],
        ['not_sent', null],
        ['unknown', 'assume-failed'],
        ['accepted', null],
      ]);
    }, 90_000);
  },
);

describe.concurrent('an operator’s deliberate re-send', () => {
  it('resolve as failed, then retry, inside the window: a new key, so the provider really sends again', async () => {
    const orderId = await createOrder(database.db);
    const first = await (await start(orderId, 'assume-sent')).result();
    expect(first).toMatchObject({ result: 'sent', outcome: 'accepted' });

    await resolveOrderMail(opsContext('assume-sent'), {
      orderId,
      as: 'failed',
      reason: 'customer got nothing',
    });
    await retryOrderMail(opsContext('assume-sent'), { orderId, reason: 'send it again' });
    const again = await client.workflow.getHandle<typeof orderConfirmationMail>(orderId).result();

    const messages = sandbox.messagesFor(orderId);
    expect(messages).toHaveLength(2);
    expect(again).toMatchObject({ result: 'sent', outcome: 'accepted', providerMessageId: messages[1]!.id });
    expect(requestsOf(orderId).map((request) => [request.idempotencyKey, request.replayed])).toEqual([
      [orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 0), false],
      [orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 1), false],
    ]);
    expect((await listAttempts(database.db, orderId)).map((attempt) => attempt.resendCount)).toEqual([0, 1]);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', resendCount: 1 });
  });
});

describe.concurrent('409 invalid_idempotent_request', () => {
  it('is evidence of an earlier send: settled by the policy, not a rejection; one message', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const handle = await start(orderId, 'assume-sent');
    await waitFor('attempt 1 to be left for a retry under the key', async () =>
      (await readMailLog(database.db, orderId))?.unknownPolicy === 'idempotent-retry' ? true : undefined,
    );
    // The order changes before the retry: the same key now comes with another body.
    await database.db.query(`UPDATE orders SET customer_name = '山田 花子' WHERE id = $1`, [orderId]);

    const result = await handle.result();
    expect(requestsOf(orderId).map((request) => request.status)).toEqual(['dropped', 409]);
    expect(result).toMatchObject({ result: 'sent', outcome: 'unknown', attempts: 2 });
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'unknown',
      unknownPolicy: 'assume-sent',
      httpStatus: 409,
    });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });
});
