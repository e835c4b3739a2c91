// Claim and record run as local activities, and Temporal may run a local activity more than once: when the
// workflow task that ran it fails before its result is recorded, the retried task runs it again. These
// tests make that happen for real (a workflow task fails right after the first execution) and check that
// the re-execution is harmless: one mail, one attempt, a sent/accepted row, one audit row.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { activityInfo } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createActivities, type ActivityDependencies } from '../../src/activities';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailTransport } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { orderMailWorkerOptions } from '../../src/workerOptions';
import { bundleWithInterceptor } from '../support/interceptedBundle';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  testMailClient,
  testSettings,
  WORKFLOWS_ON_MAIN_THREAD,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let client: Client;
let workflowCode: string;

beforeAll(async () => {
  database = await openTestDatabase('local_bookkeeping');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  client = await connectTestClient();
  // A bundle of its own: the run's shared bundle has no test interceptor in it, and must not.
  workflowCode = await bundleWithInterceptor(
    path.join(__dirname, '../support/failWorkflowTaskAfterFirstExecution.ts'),
  );
});

afterAll(async () => {
  await client.connection.close();
  await mail.close();
  await sandbox.close();
  await database.close();
});

/** Runs one order's workflow on a worker whose activities count their executions and how they ran. */
async function runWithFailedWorkflowTask(
  orderId: string,
  failAfter: 'claimOrderMail' | 'recordOrderMailOutcome',
) {
  const deps: ActivityDependencies = {
    db: database.db,
    mail,
    settings: testSettings(),
    workerIdentity: 'local-bookkeeping-test',
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'ご注文ありがとうございます' },
  };
  const real = createActivities(deps);
  const executions = { claim: [] as boolean[], record: [] as boolean[] };
  const activities = {
    ...real,
    claimOrderMail: async (input: Parameters<typeof real.claimOrderMail>[0]) => {
      executions.claim.push(activityInfo().isLocal);
      return real.claimOrderMail(input);
    },
    recordOrderMailOutcome: async (input: Parameters<typeof real.recordOrderMailOutcome>[0]) => {
      executions.record.push(activityInfo().isLocal);
      return real.recordOrderMailOutcome(input);
    },
  };
  const taskQueue = `local-bookkeeping-${randomUUID()}`;
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await Worker.create({
    ...orderMailWorkerOptions({
      connection,
      namespace: inject('temporalNamespace'),
      taskQueue,
      dependencies: deps,
      workflows: { workflowBundle: { code: workflowCode } },
      shutdownGraceTimeMs: 1_000,
      maxConcurrentActivityTaskExecutions: 20,
    }),
    activities,
    ...WORKFLOWS_ON_MAIN_THREAD,
  });
  try {
    // Starting needs no worker; the worker runs until the workflow's result is in.
    const handle = await client.workflow.start(orderConfirmationMail, {
      workflowId: orderId,
      taskQueue,
      args: [orderId],
      memo: { failWorkflowTaskAfterFirst: failAfter },
    });
    const result = await worker.runUntil(handle.result());
    const events = (await handle.fetchHistory()).events ?? [];
    const failedWorkflowTasks = events.filter((event) => event.workflowTaskFailedEventAttributes).length;
    return { result, executions, failedWorkflowTasks };
  } finally {
    await connection.close();
  }
}

describe('claim and record as local activities, re-executed by a workflow-task retry', () => {
  it('a claim that runs twice finds its own claim: one mail, attempt 1, one audit row', async () => {
    const orderId = await createOrder(database.db);
    const run = await runWithFailedWorkflowTask(orderId, 'claimOrderMail');

    expect(run.failedWorkflowTasks).toBe(1);
    expect(run.executions.claim).toEqual([true, true]);
    expect(run.result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 1,
    });
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
  });

  it('a record that runs twice finds its own settled row: one mail, sent/accepted, one audit row', async () => {
    const orderId = await createOrder(database.db);
    const run = await runWithFailedWorkflowTask(orderId, 'recordOrderMailOutcome');

    expect(run.failedWorkflowTasks).toBe(1);
    expect(run.executions.record).toEqual([true, true]);
    expect(run.result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 1 });
    expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'sent',
      outcome: 'accepted',
      attempts: 1,
    });
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);
  });
});
