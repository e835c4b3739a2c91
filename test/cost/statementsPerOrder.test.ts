// What one order costs our Postgres in statements, guarded: one order accepted at once, and one whose send
// ends unknown (accepted, the answer lost) until the provider's lookup finds it, each run twice through a worker
// as the bench runs it (verification on, the provider's health counted), its statements counted at the
// worker's pool (test/support/statementCount.ts). A statement added to the accepted path fails here; one
// removed fails until the pin is lowered. docs/benchmarks.md, "Statements per order since 2.0".
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOrderPaths, type OrderPath } from '../../dev/bench/cost/orderPaths';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createDatabase } from '../../src/db/pool';
import type { VerificationSettings } from '../../src/shared/workflowSettings';
import {
  captureStatements,
  tally,
  type StatementCapture,
  type StatementTally,
} from '../support/statementCount';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';
import { testVerifier } from '../support/verificationKit';

// Every statement the worker sends for one accepted order (docs/benchmarks.md): the claim, the read of the
// order and the attempt's provider, the dispatch fence, the provider's health count, the record.
const PINNED_ACCEPTED_STATEMENTS = 5;

const WORKER_APPLICATION = 'statements-per-order worker';
// The sandbox indexes a message 300 ms after it took it; the workflow asks after 1.2 s: found at the first ask.
const VERIFY: VerificationSettings = { settleDelayMs: 1_200, lookupTimeoutMs: 800, deadlineMs: 4_000 };
const PATHS = ['accepted', 'unknown'] as const satisfies readonly OrderPath[];

let database: TestDatabase;
let sandbox: MailSandbox;
let client: Client;
let capture: StatementCapture;
const stops: (() => Promise<void>)[] = [];
/** Per path, each run's statements. */
const measured = new Map<OrderPath, string[][]>();

beforeAll(async () => {
  database = await openTestDatabase('statements');
  stops.push(() => database.close());
  sandbox = await startMailSandbox({ lookups: { indexingLagMs: 300 } });
  stops.push(() => sandbox.close());
  client = await connectTestClient();
  stops.push(() => client.connection.close());
  capture = captureStatements(WORKER_APPLICATION);
  // Named, as a worker's are by default (PG_PREPARED_STATEMENTS): the count is the unnamed one's.
  const db = createDatabase({
    connectionString: database.connectionString,
    applicationName: WORKER_APPLICATION,
    preparedStatements: true,
  });
  stops.push(() => db.close());
  const mail = testProviderMailClient('generic', sandbox.url);
  stops.push(() => mail.close());
  const verifier = testVerifier('generic', sandbox.url, { settings: VERIFY });
  stops.push(() => verifier.close());
  const worker = await startTestWorker({
    db,
    mail,
    settings: testSettings({ verification: VERIFY }),
    verifier: verifier.verifier,
    // As every worker's config has it (MAIL_PROVIDER_SKIP_*): a send counts its answer against its provider.
    providerHealth: { skipAfterFailures: 3, skipForMs: 60_000 },
  });
  stops.push(() => worker.stop());
  // One order at a time: the worker's pool then carries that order's statements only.
  for (const path of PATHS) {
    for (let run = 0; run < 2; run++) {
      capture.take();
      const [done] = await runOrderPaths(
        {
          client,
          taskQueue: worker.taskQueue,
          db: database.db,
          createOrder: () => createOrder(database.db),
          queueFault: async (orderId, fault) => sandbox.queueFault(orderId, fault),
          verifies: true,
        },
        [path],
      );
      expect(done!.problems).toEqual([]);
      measured.set(path, [...(measured.get(path) ?? []), capture.take()]);
    }
  }
  for (const path of PATHS) {
    const runs = measured.get(path)!;
    const statements = runs[0]!;
    console.log(
      `${path}: ${runs.map((each) => JSON.stringify(tally(each))).join(' ')}\n` +
        statements.map((text) => `  ${text.replace(/\s+/g, ' ').trim().slice(0, 110)}`).join('\n'),
    );
  }
}, 120_000);

afterAll(async () => {
  capture?.stop();
  for (const stop of stops.reverse()) await stop();
});

describe('statements per order', () => {
  it(`accepted: ${PINNED_ACCEPTED_STATEMENTS} statements, the same for every such order`, () => {
    const [first, second] = measured.get('accepted')!;
    expect(tally(first!)).toEqual(tally(second!));
    expect(tally(first!)).toEqual<StatementTally>({
      all: PINNED_ACCEPTED_STATEMENTS,
      transactionControl: 0,
      orderMailLog: 4,
      orderMailAttempts: 1,
      orderSource: 2,
      other: 1,
    });
  });
});
