// Worker clocks apart, through a real workflow: the claim must not depend on a worker's clock. For a local
// activity the worker itself stamps the schedule time, so a worker whose clock is behind stamps its claims
// "earlier" than the claims it follows. Here the run's second claim lands on such a worker (its activity
// context says 30 s behind, exactly what that worker would report); the claim orders by the time the
// workflow issued it, which the server stamps and history records, so the run carries on.
// (A test with real worker processes under libfaketime exercises the same with real clocks.)
import { activityInfo } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type ActivityDependencies, type ClaimOrderMailInput } from '../../src/activities';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const SLOW_BY_MS = 30_000;

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let worker: RunningTestWorker;
const claimsSeen = new Map<string, number>();

beforeAll(async () => {
  database = await openTestDatabase('worker_clocks');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  const deps: ActivityDependencies = {
    db: database.db,
    mail,
    settings: testSettings(),
    workerIdentity: 'slow-clock',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const real = createActivities(deps);
  worker = await startTestWorker(deps, {
    activities: {
      ...real,
      // Every claim after an order's first runs as it would on a worker whose clock is 30 s behind.
      claimOrderMail: (input: ClaimOrderMailInput) => {
        const seen = claimsSeen.get(input.orderId) ?? 0;
        claimsSeen.set(input.orderId, seen + 1);
        if (seen === 0) return real.claimOrderMail(input);
        const info = activityInfo();
        const slow = new MockActivityEnvironment({
          ...info,
          scheduledTimestampMs: info.scheduledTimestampMs - SLOW_BY_MS,
          currentAttemptScheduledTimestampMs: info.currentAttemptScheduledTimestampMs - SLOW_BY_MS,
          startToCloseTimeoutMs: info.startToCloseTimeoutMs,
        });
        return slow.run(real.claimOrderMail, input);
      },
    },
  });
});

afterAll(async () => {
  await worker.stop();
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

describe('worker clocks apart', () => {
  it('a retried claim on a slow-clocked worker still claims: one message, attempts 1 and 2', async () => {
    const orderId = await createOrder(database.db);
    // Attempt 1 is refused for now; attempt 2 is claimed on the slow worker and accepted.
    sandbox.queueFault(orderId, { kind: 'status', status: 429 });
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue: worker.taskQueue,
      args: [orderId],
    });
    // On main the second claim never settles (ClaimNotSettledError, retried forever): bounded here.
    const result = await Promise.race([
      handle.result(),
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('the run did not finish within 40 s')), 40_000).unref(),
      ),
    ]);
    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(claimsSeen.get(orderId)).toBe(2);
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'sent', attempts: 2 });
    expect((await listAttempts(database.db, orderId)).map((attempt) => attempt.outcome)).toEqual([
      'not_sent',
      'accepted',
    ]);
  }, 60_000);
});
