// `npm run setup` and the worker's start-up check, on a namespace of their own (created here without any custom
// search attributes): the worker refuses to start and says what to run; setup registers the attributes and the
// reconciliation schedule, and running it again changes nothing; then the worker starts.
import { randomUUID } from 'node:crypto';
import { Client, Connection, isGrpcServiceError } from '@temporalio/client';
import { google } from '@temporalio/proto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { main as setup } from '../../src/cli/setup';
import { ORDER_MAIL_SEARCH_ATTRIBUTES } from '../../src/shared/orderMailSearchAttributes';
import { DEFAULT_SWEEP_SCHEDULE_ID } from '../../src/temporal/sweepSchedule';
import {
  assertSearchAttributesRegistered,
  SearchAttributesMissingError,
} from '../../src/temporal/searchAttributeRegistration';
import { openTestDatabase, waitFor, type TestDatabase } from '../support/testKit';
import { spawnWorkerProcess } from '../support/workerProcess';

const namespace = `setup-${randomUUID().slice(0, 8)}`;
const taskQueue = `setup-${randomUUID()}`;
let connection: Connection;
let database: TestDatabase;

beforeAll(async () => {
  database = await openTestDatabase('setup');
  connection = await Connection.connect({ address: inject('temporalAddress') });
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: google.protobuf.Duration.fromObject({ seconds: 24 * 60 * 60 }),
  });
  // A new namespace is served once the frontend's namespace cache has it.
  await waitFor('the new namespace to be served', async () => {
    try {
      await connection.operatorService.listSearchAttributes({ namespace });
      return true;
    } catch (error) {
      if (isGrpcServiceError(error)) return undefined;
      throw error;
    }
  });
});

afterAll(async () => {
  await connection.close();
  await database.close();
});

function workerEnvironment(): Record<string, string> {
  return {
    DATABASE_URL: database.connectionString,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: namespace,
    MAIL_DEPLOYMENT_ID: namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    MAIL_API_BASE_URL: 'http://127.0.0.1:9',
    MAIL_API_KEY: 'unused',
    // The run's bundle, as the image's WORKFLOW_BUNDLE_PATH: webpack at each start would cost seconds of CPU.
    WORKFLOW_BUNDLE_PATH: inject('workflowBundlePath'),
  };
}

it('the worker refuses to start on a namespace without the search attributes, and says what to run', async () => {
  await expect(assertSearchAttributesRegistered(connection, namespace)).rejects.toBeInstanceOf(
    SearchAttributesMissingError,
  );
  const worker = spawnWorkerProcess(workerEnvironment());
  const exitCode = await worker.exited;
  await worker.started.catch(() => undefined);
  expect(exitCode).toBe(1);
  expect(worker.output()).not.toContain('"message":"Worker started"');
  // The message is what an operator reads: it must name what is missing and the command that fixes it.
  for (const key of ORDER_MAIL_SEARCH_ATTRIBUTES) expect(worker.output()).toContain(key.name);
  expect(worker.output()).toContain('npm run setup');
});

it('setup registers the attributes and the schedule, runs again without changing anything, then the worker starts', async () => {
  const env = {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
  };
  const said: string[] = [];
  await setup(env, (line) => said.push(line));
  await setup(env, (line) => said.push(line));
  expect(said.filter((line) => line.startsWith('Reconciliation schedule created'))).toHaveLength(1);
  expect(said.filter((line) => line.startsWith('Reconciliation schedule updated'))).toHaveLength(1);

  await assertSearchAttributesRegistered(connection, namespace);
  const schedule = new Client({ connection, namespace }).schedule.getHandle(DEFAULT_SWEEP_SCHEDULE_ID);
  const described = await schedule.describe();
  expect(described.action).toMatchObject({ workflowType: 'reconcileOrderMails', taskQueue });
  expect(described.spec.intervals).toMatchObject([{ every: 300_000 }]);
  expect(described.state.paused).toBe(false);
  expect(described.policies.overlap).toBe('SKIP');

  const worker = spawnWorkerProcess(workerEnvironment());
  try {
    await worker.started;
  } finally {
    worker.child.kill('SIGTERM');
    await worker.exited;
    await schedule.delete();
  }
});
