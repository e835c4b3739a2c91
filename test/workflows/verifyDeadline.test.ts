// The verify activity's start-to-close timeout holds its work: a provider whose lookup answers every page just
// within the lookup timeout, and always has one more page, does not keep a try running past the timeout
// Temporal gives it. All lookups of a try share one deadline; past it the pages read are an incomplete answer,
// the try returns, and the workflow ends by the policy with verification inconclusive. Real HTTP over loopback
// (a Mailgun-shaped server of the test's own), real Postgres, a real Temporal dev server.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyActivityTimeoutMs, type VerificationSettings } from '../../src/shared/workflowSettings';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';
import { attemptsWithVerification, testVerifier } from '../support/verificationKit';

// Each page takes 400 ms, within the 1 s lookup timeout; 20 of them (the client's page limit) take 8 s, past
// the try's 6 s start-to-close timeout. The deadline (10 s) is longer, so a timed-out try would be retried.
const PAGE_DELAY_MS = 400;
const VERIFY: VerificationSettings = { settleDelayMs: 1_500, lookupTimeoutMs: 1_000, deadlineMs: 10_000 };

let database: TestDatabase;
let provider: Server;
let providerUrl: string;
let client: Client;
let taskQueue: string;
const stops: (() => Promise<void>)[] = [];

/** Drops every send after reading it (an unknown outcome); answers every events page slowly, with a next. */
function startSlowPagingProvider(): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method === 'POST') {
      req.resume();
      req.on('end', () => req.socket.destroy());
      return;
    }
    req.resume();
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const page = Number(url.searchParams.get('page') ?? '0');
    const next = new URL(url.pathname, providerUrl);
    next.searchParams.set('page', String(page + 1));
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          // Another message's event: not ours, so every page is read and nothing decides.
          items: [
            {
              event: 'accepted',
              timestamp: Date.now() / 1000,
              message: { headers: { 'message-id': `other-${page}@x` } },
            },
          ],
          paging: { next: next.toString() },
        }),
      );
    }, PAGE_DELAY_MS);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

beforeAll(async () => {
  database = await openTestDatabase('verify_deadline');
  provider = await startSlowPagingProvider();
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  client = await connectTestClient();
  const mail = testProviderMailClient('mailgun', providerUrl);
  const verifier = testVerifier('mailgun', providerUrl, { settings: VERIFY });
  const worker = await startTestWorker({
    db: database.db,
    mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent', verification: VERIFY }),
    verifier: verifier.verifier,
  });
  taskQueue = worker.taskQueue;
  stops.push(
    () => worker.stop(),
    () => verifier.close(),
    () => mail.close(),
  );
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await client?.connection.close();
  await new Promise((resolve) => provider?.close(resolve));
  await database?.close();
});

it('a lookup paging slowly without end: every verify try returns within its timeout, and the policy decides as inconclusive', async () => {
  const orderId = await createOrder(database.db);
  const result = await client.workflow.execute(orderConfirmationMail, {
    workflowId: orderId,
    taskQueue,
    args: [orderId],
  });

  expect(result).toMatchObject({ result: 'sent', outcome: 'unknown' });
  const [attempt, ...more] = await attemptsWithVerification(database.db, orderId);
  expect(more).toEqual([]);
  expect(attempt).toMatchObject({
    outcome: 'unknown',
    unknownPolicy: 'assume-sent',
    verification: 'inconclusive',
  });

  // Every try of the verify activity completed on its first attempt, inside its start-to-close timeout: none
  // timed out (and was retried) while reading pages.
  const history = await client.workflow.getHandle(orderId).fetchHistory();
  const scheduled = new Map<string, string>();
  const started = new Map<string, { attempt: number; at: number }>();
  const tries: { attempt: number; tookMs: number }[] = [];
  let timedOut = 0;
  for (const event of history.events ?? []) {
    const id = String(event.eventId);
    const at = Number(event.eventTime?.seconds ?? 0) * 1000 + Math.round((event.eventTime?.nanos ?? 0) / 1e6);
    const activity = event.activityTaskScheduledEventAttributes;
    if (activity) scheduled.set(id, activity.activityType?.name ?? '');
    const start = event.activityTaskStartedEventAttributes;
    if (start && scheduled.get(String(start.scheduledEventId)) === 'verifyOrderMail') {
      started.set(id, { attempt: start.attempt ?? 0, at });
    }
    const done = event.activityTaskCompletedEventAttributes;
    const begun = done ? started.get(String(done.startedEventId)) : undefined;
    if (begun) tries.push({ attempt: begun.attempt, tookMs: at - begun.at });
    if (event.activityTaskTimedOutEventAttributes) timedOut++;
  }
  expect(timedOut).toBe(0);
  expect(tries.length).toBeGreaterThanOrEqual(2);
  for (const verifyTry of tries) {
    expect(verifyTry.attempt).toBe(1);
    expect(verifyTry.tookMs).toBeLessThan(verifyActivityTimeoutMs(VERIFY));
  }
}, 90_000);
