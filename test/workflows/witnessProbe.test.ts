// A witness on demand (src/verification/witnessProbe.ts): in a quiet period, an attempt whose request never
// reached the provider has no later accepted send to witness its "not found", and without one it waits for its
// deadline and the policy decides (under assume-sent: no mail at all). With a sink address the service makes one
// probe of the destination, and the probe, accepted after the attempt's end and shown by the lookup, lets "not
// found" count: the order is claimed again and gets its one mail. Real HTTP over loopback (the sandbox),
// Postgres and Temporal.
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { MailTransport } from '../../src/mail/types';
import { noOrderMailMetrics, type OrderMailMetrics } from '../../src/metrics/orderMailMetrics';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import { createWitnessProber } from '../../src/verification/witnessProbe';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
} from '../support/testKit';
import { attemptsWithVerification, testVerifier, untilAttemptEnded } from '../support/verificationKit';

// All seven tests at once, not vitest's default of 5: each has its database, sandbox and workers of its own
// (openBed), and most of a test is waiting out a send timeout and a settle delay (issue 38).
vi.setConfig({ maxConcurrency: 7 });

const SINK = 'witness-sink@example.com';
const VERIFY: VerificationSettings = { settleDelayMs: 2_000, lookupTimeoutMs: 800, deadlineMs: 20_000 };

let client: Client;

beforeAll(async () => {
  client = await connectTestClient();
}, 120_000);

afterAll(async () => {
  await client?.connection.close();
});

/**
 * What one test needs: a database and a sandbox of its own, so the file's tests run side by side (a probe is
 * shared per destination and counted per database; another test's send there would be a witness).
 */
async function openBed() {
  const database = await openTestDatabase('witness_probe');
  const sandbox = await startMailSandbox();
  const mail = testProviderMailClient('generic', sandbox.url);
  const verification = testVerifier('generic', sandbox.url, { settings: VERIFY });
  return {
    database,
    sandbox,
    mail,
    verification,
    async close() {
      await verification.close();
      await mail.close();
      await sandbox.close();
      await database.close();
    },
  };
}
type Bed = Awaited<ReturnType<typeof openBed>>;

/** A worker with a prober of its own over the same destination; `probes` counts what its metrics saw. */
async function workerWithProber(
  bed: Bed,
  intervalMs: number,
  probes: string[] = [],
  over: { mail: MailTransport; verifier: ReturnType<typeof testVerifier> } = {
    mail: bed.mail,
    verifier: bed.verification,
  },
  verify: VerificationSettings = VERIFY,
) {
  const metrics: OrderMailMetrics = {
    ...noOrderMailMetrics,
    witnessProbeFinished: (_provider, outcome) => void probes.push(outcome),
  };
  const prober = createWitnessProber({
    db: bed.database.db,
    settings: { sinkAddress: SINK, intervalMs },
    transports: [over.mail],
    identityOf: () => ({ from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' }),
    deploymentId: 'default',
    workerIdentity: 'test',
    metrics,
  });
  const worker = await startTestWorker({
    db: bed.database.db,
    mail: over.mail,
    settings: testSettings({ unknownOutcomePolicy: 'assume-sent', verification: verify }),
    verifier: over.verifier.verifier,
    witnessProber: prober,
    metrics,
  });
  return {
    taskQueue: worker.taskQueue,
    stop: async () => {
      await worker.stop();
      await prober.settled();
    },
  };
}

function runMail(orderId: string, taskQueue: string) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

async function probeRows(bed: Bed) {
  const { rows } = await bed.database.db.query<{ outcome: string | null; httpStatus: number | null }>(
    `SELECT outcome, http_status AS "httpStatus" FROM order_mail_witness_probes ORDER BY dispatched_at`,
  );
  return rows;
}

const toSink = (bed: Bed) => bed.sandbox.messages().filter((message) => message.to === SINK);

describe.concurrent('a request that never reached the provider, in a quiet period (assume-sent)', () => {
  it('a probe accepted after the attempt ended lets "not found" count: claimed again, one mail', async () => {
    const bed = await openBed();
    const worker = await workerWithProber(bed, 30_000);
    try {
      const sent = await createOrder(bed.database.db);
      await runMail(sent, worker.taskQueue);
      // An order whose send was accepted waits for nothing: no probe.
      expect(await probeRows(bed)).toEqual([]);

      const lost = await createOrder(bed.database.db);
      bed.sandbox.queueFault(lost, { kind: 'drop-without-processing' });
      await runMail(lost, worker.taskQueue);

      expect(bed.sandbox.messagesFor(lost)).toHaveLength(1);
      expect(await attemptsWithVerification(bed.database.db, lost)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
        { attempt: 2, state: 'sent', outcome: 'accepted', verification: null },
      ]);
      expect(await probeRows(bed)).toEqual([{ outcome: 'accepted', httpStatus: 202 }]);
      expect(toSink(bed)).toHaveLength(1);
      // A probe is no order's: the log and the audit hold the two orders' rows and nothing else.
      const { rows } = await bed.database.db.query<{ log: number; orders: number }>(
        `SELECT (SELECT count(*)::int FROM order_mail_log) AS log, (SELECT count(*)::int FROM orders) AS orders`,
      );
      expect(rows[0]!.log).toBe(rows[0]!.orders);
    } finally {
      await worker.stop();
      await bed.close();
    }
  }, 90_000);

  it('a customer’s send accepted after the attempt ended is the witness: no probe', async () => {
    // A settle delay long enough for the other order's send (made at the attempt's end) to be accepted before
    // the first ask: the run saw its request end at once, so it asks a settle delay after its dispatch.
    const slow: VerificationSettings = { ...VERIFY, settleDelayMs: 12_000, deadlineMs: 40_000 };
    const bed = await openBed();
    const slowVerifier = testVerifier('generic', bed.sandbox.url, { settings: slow });
    const worker = await workerWithProber(bed, 1_000, [], { mail: bed.mail, verifier: slowVerifier }, slow);
    try {
      const lost = await createOrder(bed.database.db);
      bed.sandbox.queueFault(lost, { kind: 'drop-without-processing' });
      const lostRun = runMail(lost, worker.taskQueue);
      await untilAttemptEnded(bed.database.db, lost);
      const witness = await createOrder(bed.database.db);
      await runMail(witness, worker.taskQueue);
      await lostRun;

      expect(bed.sandbox.messagesFor(lost)).toHaveLength(1);
      expect(await attemptsWithVerification(bed.database.db, lost)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
        { attempt: 2, state: 'sent', outcome: 'accepted' },
      ]);
      expect(await probeRows(bed)).toEqual([]);
      expect(toSink(bed)).toHaveLength(0);
    } finally {
      await worker.stop();
      await slowVerifier.close();
      await bed.close();
    }
  }, 90_000);

  it('many pending unknowns on two workers share one probe of the destination', async () => {
    const probes: string[] = [];
    const bed = await openBed();
    const workers = [
      await workerWithProber(bed, 60_000, probes),
      await workerWithProber(bed, 60_000, probes),
    ];
    try {
      const orders: { orderId: string; taskQueue: string }[] = [];
      for (let i = 0; i < 10; i++) {
        const orderId = await createOrder(bed.database.db);
        bed.sandbox.queueFault(orderId, { kind: 'drop-without-processing' });
        orders.push({ orderId, taskQueue: workers[i % 2]!.taskQueue });
      }
      await Promise.all(orders.map(({ orderId, taskQueue }) => runMail(orderId, taskQueue)));

      for (const { orderId } of orders) {
        expect(bed.sandbox.messagesFor(orderId)).toHaveLength(1);
        expect(await attemptsWithVerification(bed.database.db, orderId)).toMatchObject([
          { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
          { attempt: 2, state: 'sent', outcome: 'accepted' },
        ]);
      }
      expect(await probeRows(bed)).toEqual([{ outcome: 'accepted', httpStatus: 202 }]);
      expect(toSink(bed)).toHaveLength(1);
      expect(probes.filter((outcome) => outcome === 'accepted')).toHaveLength(1);
    } finally {
      for (const worker of workers) await worker.stop();
      await bed.close();
    }
  }, 90_000);

  it('a refused probe changes nothing (the policy decides, as without probes) and is counted', async () => {
    const probes: string[] = [];
    const bed = await openBed();
    const worker = await workerWithProber(bed, 1_000, probes);
    try {
      const lost = await createOrder(bed.database.db);
      bed.sandbox.queueFault(lost, { kind: 'drop-without-processing' });
      // Every other request is refused as a suppressed recipient would be: only probes are left to send.
      bed.sandbox.setFaultPlan({ rates: [{ fault: { kind: 'status', status: 422 }, probability: 1 }] });
      await runMail(lost, worker.taskQueue);

      expect(bed.sandbox.messagesFor(lost)).toHaveLength(0);
      expect(await attemptsWithVerification(bed.database.db, lost)).toMatchObject([
        {
          attempt: 1,
          state: 'sent',
          outcome: 'unknown',
          unknownPolicy: 'assume-sent',
          verification: 'inconclusive',
        },
      ]);
      const rows = await probeRows(bed);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.every((row) => row.outcome === 'rejected' && row.httpStatus === 422)).toBe(true);
      expect(probes.filter((outcome) => outcome === 'rejected')).toHaveLength(rows.length);
      expect(toSink(bed)).toHaveLength(0);
    } finally {
      await worker.stop();
      await bed.close();
    }
  }, 90_000);
});

describe.concurrent.each(['postmark', 'mailgun'] as const)(
  '%s: the probe on its own stream or domain',
  (provider) => {
    it('is accepted, shown by the lookup, and lets "not found" count: one mail', async () => {
      const bed = await openBed();
      const providerMail = testProviderMailClient(provider, bed.sandbox.url);
      const verifier = testVerifier(provider, bed.sandbox.url, { settings: VERIFY });
      const worker = await workerWithProber(bed, 30_000, [], { mail: providerMail, verifier });
      try {
        const lost = await createOrder(bed.database.db);
        bed.sandbox.queueFault(lost, { kind: 'drop-without-processing' });
        await runMail(lost, worker.taskQueue);

        expect(bed.sandbox.messagesFor(lost)).toHaveLength(1);
        expect(await attemptsWithVerification(bed.database.db, lost)).toMatchObject([
          { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
          { attempt: 2, state: 'sent', outcome: 'accepted', verification: null },
        ]);
        const probes = await probeRows(bed);
        expect(probes.length).toBeGreaterThan(0);
        expect(probes.every((row) => row.outcome === 'accepted')).toBe(true);
        expect(toSink(bed).every((message) => message.provider === provider)).toBe(true);
      } finally {
        await worker.stop();
        await verifier.close();
        await providerMail.close();
        await bed.close();
      }
    }, 90_000);
  },
);

describe.concurrent('mailgun: a probe must be a settle delay old before it counts', () => {
  it('with a deadline of one settle delay, the ask after the probe waits long enough for it: one mail', async () => {
    // One wait in all (the deadline is one settle delay): the ask after it is the last.
    const oneWait: VerificationSettings = { settleDelayMs: 4_000, lookupTimeoutMs: 800, deadlineMs: 4_000 };
    const bed = await openBed();
    const providerMail = testProviderMailClient('mailgun', bed.sandbox.url);
    const verifier = testVerifier('mailgun', bed.sandbox.url, { settings: oneWait });
    const worker = await workerWithProber(bed, 30_000, [], { mail: providerMail, verifier }, oneWait);
    try {
      const lost = await createOrder(bed.database.db);
      bed.sandbox.queueFault(lost, { kind: 'drop-without-processing' });
      await runMail(lost, worker.taskQueue);

      expect(bed.sandbox.messagesFor(lost)).toHaveLength(1);
      expect(await attemptsWithVerification(bed.database.db, lost)).toMatchObject([
        { attempt: 1, state: 'failed', outcome: 'not_sent', verification: 'lookup' },
        { attempt: 2, state: 'sent', outcome: 'accepted' },
      ]);
      expect(await probeRows(bed)).toEqual([{ outcome: 'accepted', httpStatus: 200 }]);
    } finally {
      await worker.stop();
      await verifier.close();
      await providerMail.close();
      await bed.close();
    }
  }, 90_000);
});
