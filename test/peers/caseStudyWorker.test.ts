// The case study's Python mail worker as real processes: its Redis job queue, a database of its own holding
// the case study's order_mail_log, and the mail sandbox over loopback. Each test starts workers, enqueues
// jobs, waits until the queue is drained (empty, every worker idle), stops the workers (they finish the job in
// hand first), and only then asserts the rows and what the sandbox accepted, so a late duplicate cannot slip past.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createOrder, waitFor } from '../support/testKit';
import {
  enqueueOrders,
  newQueueName,
  openCaseStudyDatabase,
  queueDrained,
  queueLength,
  readCaseStudyRows,
  startCaseStudyWorkers,
  type CaseStudyDatabase,
  type CaseStudyRow,
} from './caseStudyKit';
import type { PeerProcess } from '../../dev/peers/pythonPeers';
import { startRedisServer, type RedisServer } from '../../dev/peers/redisServer';

let database: CaseStudyDatabase;
let sandbox: MailSandbox;
let redis: RedisServer;
let running: PeerProcess[] = [];

beforeAll(async () => {
  database = await openCaseStudyDatabase('case_study_worker');
  sandbox = await startMailSandbox();
  redis = await startRedisServer();
});

afterEach(async () => {
  // A failed test must not leave workers polling.
  await Promise.all(running.map((worker) => worker.stop()));
  running = [];
});

afterAll(async () => {
  await redis?.stop();
  await sandbox?.close();
  await database?.close();
});

/**
 * Starts `workers` processes on a queue of their own, enqueues `jobs`, waits until the queue is drained (empty,
 * every worker idle in BLPOP), stops the workers, checks they exited cleanly, and returns the rows of `orderIds`.
 */
async function runWorkers(options: {
  workers: number;
  jobs: string[];
  orderIds: string[];
  env?: Record<string, string>;
}): Promise<Map<string, CaseStudyRow>> {
  const queue = newQueueName();
  running = startCaseStudyWorkers(options.workers, {
    databaseUrl: database.caseStudyConnectionString,
    redis,
    queue,
    mailApiBaseUrl: sandbox.url,
    env: options.env,
  });
  await enqueueOrders(redis, queue, options.jobs);
  const describeWorkers = () => running.map((worker) => `--- ${worker.name}\n${worker.output()}`).join('\n');
  try {
    await waitFor(
      'the queue drained',
      async () => {
        for (const worker of running) {
          if (worker.child.exitCode !== null) throw new Error(`${worker.name} exited early`);
        }
        return (await queueDrained(redis, queue, options.workers)) ? true : undefined;
      },
      45_000,
    );
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${describeWorkers()}`, { cause: error });
  }
  const codes = await Promise.all(running.map((worker) => worker.stop()));
  expect(codes, describeWorkers()).toEqual(running.map(() => 0));
  running = [];
  // Nothing was left behind for a worker that is no longer there.
  expect(await queueLength(redis, queue)).toBe(0);
  return readCaseStudyRows(database.db, options.orderIds);
}

describe('the case study mail worker (Python, real processes)', () => {
  it('sends each of 20 orders once, though every job is queued twice and three workers race for them', async () => {
    const orderIds: string[] = [];
    for (let i = 0; i < 20; i += 1) orderIds.push(await createOrder(database.db));
    const rows = await runWorkers({
      workers: 3,
      jobs: [...orderIds, ...orderIds],
      orderIds,
    });
    for (const orderId of orderIds) {
      expect(rows.get(orderId)).toEqual({ state: 'sent', attempts: 1 });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    }
    const message = sandbox.messagesFor(orderIds[0]!)[0]!;
    expect(message.subject).toBe('ご注文ありがとうございます');
    expect(message.text).toContain(orderIds[0]);
  });

  it('records failed for a 4xx and lets the queue run the job again, up to JOB_MAX_ATTEMPTS: nothing accepted', async () => {
    // The sandbox answers 422 for an address it cannot deliver to.
    const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
    const rows = await runWorkers({
      workers: 2,
      jobs: [orderId],
      orderIds: [orderId],
      env: { JOB_MAX_ATTEMPTS: '3' },
    });
    expect(rows.get(orderId)).toEqual({ state: 'failed', attempts: 3 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    const statuses = sandbox.requests().filter((request) => request.orderId === orderId);
    expect(statuses.map((request) => request.status)).toEqual([422, 422, 422]);
  });

  it('reclaims a failed row with the UPDATE statement when the job runs again, and sends once', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 429 });
    const rows = await runWorkers({
      workers: 2,
      jobs: [orderId],
      orderIds: [orderId],
    });
    expect(rows.get(orderId)).toEqual({ state: 'sent', attempts: 2 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('records sent after the API accepted and cut the connection, and never sends that order again', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-drop' });
    const rows = await runWorkers({
      workers: 2,
      jobs: [orderId, orderId, orderId],
      orderIds: [orderId],
    });
    expect(rows.get(orderId)).toEqual({ state: 'sent', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(1);
  });

  it('records sent when the answer does not come within MAIL_HEADERS_TIMEOUT_MS (the accepted message stays one)', async () => {
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'accept-then-hang', ms: 10_000 });
    const rows = await runWorkers({
      workers: 1,
      jobs: [orderId, orderId],
      orderIds: [orderId],
      env: { MAIL_HEADERS_TIMEOUT_MS: '1000' },
    });
    expect(rows.get(orderId)).toEqual({ state: 'sent', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  });

  it('leaves the row sending after a 5xx, as the case study does (it catches only 4xx and timeouts)', async () => {
    // The old system's gap that an adoption has to settle: the job's reruns find `sending` and touch nothing.
    const orderId = await createOrder(database.db);
    sandbox.queueFault(orderId, { kind: 'status', status: 500 });
    const rows = await runWorkers({
      workers: 2,
      jobs: [orderId],
      orderIds: [orderId],
      env: { JOB_MAX_ATTEMPTS: '3' },
    });
    expect(rows.get(orderId)).toEqual({ state: 'sending', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(0);
    expect(sandbox.requests().filter((request) => request.orderId === orderId)).toHaveLength(1);
  });
});
