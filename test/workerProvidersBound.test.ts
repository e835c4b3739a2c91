// A real worker process (src/worker.ts, as `npm start` runs it) refuses to start while an open row is bound to
// a provider it is not configured for, naming the provider and the count, and starts when forced with a reason
// (docs/operating.md#draining-a-provider). The row is claimed under the workers' own role, as a worker that
// still had mailgun would have.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { claimOrderMailRow } from '../src/db/orderMailClaim';
import { migrate } from '../src/db/migrator';
import { createDatabase, type Database } from '../src/db/pool';
import {
  createOrder,
  openLeastPrivilegeDatabase,
  spreadOrderIds,
  type LeastPrivilegeDatabase,
} from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';

let database: LeastPrivilegeDatabase;
let asWorker: Database;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('worker_providers_bound');
  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
  asWorker = createDatabase({ connectionString: database.workerUrl, applicationName: 'test mailgun worker' });
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
    TEMPORAL_TASK_QUEUE: `providers-bound-${Date.now()}`,
    MAIL_PROVIDER: 'postmark',
    MAIL_API_BASE_URL: 'http://127.0.0.1:9',
    MAIL_API_KEY: 'sandbox-key',
    MAIL_DEPLOYMENT_ID: 'test-provider-bound',
    MAIL_VERIFY_SETTLE_DELAY_MS: '1000',
    MAIL_VERIFY_SETTLE_DELAY_OVERRIDE_REASON: 'test: nothing is sent',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    ...extra,
  });
  worker.started.catch(() => undefined);
  workers.push(worker);
  return worker;
}

it('refuses to start while a row is bound to mailgun, saying which and how many; starts when forced', async () => {
  const orderId = await createOrder(database.admin);
  const workflowScope = `default/${orderId}/`;
  const claimed = await claimOrderMailRow(asWorker, {
    orderId,
    claimToken: `${workflowScope}run-1`,
    workflowScope,
    issuedAt: new Date(),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 8_000,
    recordedBy: 'test',
    providers: ['mailgun'],
  });
  expect(claimed).toMatchObject({ kind: 'claimed', provider: 'mailgun' });

  const refused = startWorker({});
  // A configuration error: it exits at once instead of waiting, and never polls.
  const first = await Promise.race([
    refused.exited.then((code) => ({ exited: code })),
    // It rejects when the worker exits first: then the exit answers.
    refused.started.then(
      () => 'started polling',
      () => new Promise<never>(() => undefined),
    ),
  ]);
  expect(first, refused.output()).toEqual({ exited: 1 });
  expect(refused.output()).toContain('mailgun: 1 open row(s) (1 sending, 0 failed and bound to it)');
  expect(refused.output()).toContain('MAIL_PROVIDERS_FORCE_START_REASON');

  const forced = startWorker({ MAIL_PROVIDERS_FORCE_START_REASON: 'mailgun account closed by the vendor' });
  await forced.started;
  expect(forced.output()).toContain('mailgun account closed by the vendor');
}, 120_000);
