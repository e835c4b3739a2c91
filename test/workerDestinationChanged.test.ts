// A real worker process (src/worker.ts) refuses to start while an open row was dispatched to another destination
// of a provider of the same name than it is configured for (here: Postmark under another API key, as after a key
// rotation made without draining), saying which and why, and starts when forced with a reason or when its
// settings are the ones the row went out with (docs/providers.md#draining-a-provider). Such a worker could not
// verify the row where it went: its lookup would be inconclusive and the policy would decide.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { markDispatched } from '../src/activities/dispatchFence';
import { claimOrderMailRow } from '../src/db/orderMailClaim';
import { migrate } from '../src/db/migrator';
import { createDatabase, type Database } from '../src/db/pool';
import { destinationOfMailApi } from '../src/evidence/destination';
import {
  createOrder,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
} from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';

const BASE_URL = 'http://127.0.0.1:9';
let database: LeastPrivilegeDatabase;
let asWorker: Database;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('worker_destination_changed');
  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
  asWorker = createDatabase({
    connectionString: database.workerUrl,
    applicationName: 'test postmark worker',
  });
});
afterAll(async () => {
  for (const worker of workers) {
    worker.child.kill('SIGKILL');
    await worker.exited;
  }
  await asWorker?.close();
  await database?.close();
});

function startWorker(extra: Record<string, string>): WorkerProcess {
  const worker = spawnWorkerProcess({
    DATABASE_URL: database.workerUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: `destination-changed-${Date.now()}`,
    MAIL_PROVIDER: 'postmark',
    MAIL_API_BASE_URL: BASE_URL,
    MAIL_API_KEY: 'rotated-key',
    MAIL_DEPLOYMENT_ID: 'test-destination-changed',
    MAIL_VERIFY_SETTLE_DELAY_MS: '1000',
    MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'test: nothing is sent',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    ...extra,
  });
  worker.started.catch(() => undefined);
  workers.push(worker);
  return worker;
}

it('refuses to start while a row went out under the old Postmark key; starts when forced or with the old key', async () => {
  const orderId = await createOrder(database.admin);
  const workflowScope = `default/${orderId}/`;
  const claimToken = `${workflowScope}run-1`;
  const claimed = await claimOrderMailRow(asWorker, {
    orderId,
    claimToken,
    workflowScope,
    issuedAt: new Date(),
    policy: 'assume-sent',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    providers: ['postmark'],
  });
  expect(claimed).toMatchObject({ kind: 'claimed', provider: 'postmark', attempt: 1 });
  // Sent, with no answer yet, by a worker that had the old key.
  const dispatched = await markDispatched(asWorker, {
    orderId,
    claimToken,
    attempt: 1,
    provider: 'postmark',
    dispatch: {
      destination: destinationOfMailApi({
        provider: 'postmark',
        baseUrl: BASE_URL,
        apiKey: 'old-key',
        postmarkMessageStream: 'outbound',
      }),
      sendKey: `test-destination-changed/${orderId}/0`,
      sendTimeoutMs: 8_000,
    },
  });
  expect(dispatched).toBe('dispatched');

  const refused = startWorker({});
  const first = await Promise.race([
    refused.exited.then((code) => ({ exited: code })),
    refused.started.then(
      () => 'started polling',
      () => new Promise<never>(() => undefined),
    ),
  ]);
  expect(first, refused.output()).toEqual({ exited: 1 });
  expect(refused.output()).toContain('postmark: 1 open row(s); the attempt went elsewhere');
  expect(refused.output()).toContain('another API key');
  expect(refused.output()).toContain('MAIL_PROVIDERS_FORCE_START_REASON');

  const oldKey = startWorker({ MAIL_API_KEY: 'old-key' });
  await oldKey.started;

  const forced = startWorker({ MAIL_PROVIDERS_FORCE_START_REASON: 'old Postmark key revoked after a leak' });
  await forced.started;
  expect(forced.output()).toContain('old Postmark key revoked after a leak');
}, 180_000);
