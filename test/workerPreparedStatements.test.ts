// A real worker process (src/worker.ts) sends its statements named by default and unnamed with
// PG_PREPARED_STATEMENTS=false: the setting reaches the worker's pool. Its start-up reads (schema, roles,
// deployment ids, bound providers) are enough to see it; a spy loaded into the process (test/support/
// pgQuerySpy.mjs) reports how each query left.
import path from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { migrate } from '../src/db/migrator';
import { openLeastPrivilegeDatabase, spreadOrderIds, type LeastPrivilegeDatabase } from './support/testKit';
import { spawnWorkerProcess, type WorkerProcess } from './support/workerProcess';

const SPY = path.join(__dirname, 'support', 'pgQuerySpy.mjs');
let database: LeastPrivilegeDatabase;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  database = await openLeastPrivilegeDatabase('worker_prepared');
  await migrate(database.migrationUrl);
  await spreadOrderIds(database.admin);
});

afterAll(async () => {
  for (const worker of workers) {
    worker.kill('SIGKILL');
    await worker.exited;
  }
  await database?.close();
});

/** How the worker's queries left until it started polling, counted by kind. */
async function queriesOfStart(extra: Record<string, string>): Promise<Record<string, number>> {
  const worker = spawnWorkerProcess({
    DATABASE_URL: database.workerUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: `worker-prepared-${Date.now()}`,
    MAIL_API_BASE_URL: 'http://127.0.0.1:9',
    MAIL_API_KEY: 'key-123',
    MAIL_DEPLOYMENT_ID: 'test-worker-prepared',
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
    NODE_OPTIONS: `--import ${SPY}`,
    ...extra,
  });
  workers.push(worker);
  await worker.started;
  worker.kill('SIGKILL');
  await worker.exited;
  const counts: Record<string, number> = { named: 0, unnamed: 0 };
  for (const [, kind] of worker.output().matchAll(/^pg-query-spy (\w+)$/gm))
    counts[kind!] = (counts[kind!] ?? 0) + 1;
  return counts;
}

it('names every statement with values by default', async () => {
  const counts = await queriesOfStart({});
  expect(counts.named).toBeGreaterThan(0);
  expect(counts.unnamed).toBe(0);
}, 60_000);

it('names none with PG_PREPARED_STATEMENTS=false', async () => {
  const counts = await queriesOfStart({ PG_PREPARED_STATEMENTS: 'false' });
  expect(counts.named).toBe(0);
  expect(counts.unnamed).toBeGreaterThan(0);
}, 60_000);
