// Who acted, as the database and Temporal know it (migration 0057, docs/operating.md "Who you are"): `npm run
// ops` runs as the operator's own login (OPS_DATABASE_URL), every act records that login whatever the operator
// typed or exported, Temporal's history names it, and the workers' login can act on nothing.
import os from 'node:os';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { main } from '../../src/cli/ops';
import { listOperatorActs } from '../../src/db/operatorActs';
import { readMailLog } from '../../src/db/orderMailLog';
import { OPS_RETRY_RESET_REASON_PREFIX, resetHistoryReader } from '../../src/temporal/resetHistory';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import {
  createOperatorLogin,
  createOrder,
  createOutsideLogin,
  openWorkflowTestBed,
  type OutsideLogin,
  type RunningTestWorker,
  type TestDatabase,
  type WorkflowTestBed,
} from '../support/testKit';

let bed: WorkflowTestBed<'assume-sent'> | undefined;
let database: TestDatabase;
let client: Client;
let worker: RunningTestWorker;
let operator: OutsideLogin;
let workerLogin: OutsideLogin;

beforeAll(async () => {
  bed = await openWorkflowTestBed('operator_identity', ['assume-sent']);
  ({ database, client } = bed);
  worker = bed.workers['assume-sent'];
  operator = await createOperatorLogin(database.db, database.connectionString, 'alice');
  workerLogin = await createOutsideLogin(database.db, database.connectionString, 'workers');
  await database.db.query(`GRANT order_mail_worker TO ${workerLogin.user}`);
}, 120_000);

afterAll(async () => {
  await bed?.close();
  await operator?.drop();
  await workerLogin?.drop();
});

/** The CLI as `npm run ops` runs it, under `login`; OPERATOR names someone else, which must not count. */
async function opsAs(login: OutsideLogin | null, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const url = login?.connectionString ?? '';
  const code = await main(
    argv,
    {
      OPS_DATABASE_URL: url,
      // What the CLI read before: the workers' URL. It must not be taken instead of the operator's own.
      DATABASE_URL: login === null ? database.connectionString : url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: worker.taskQueue,
      OPERATOR: 'mallory',
    },
    { out: (text) => out.push(text), err: (text) => err.push(text) },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function failedThenFixed(): Promise<{ orderId: string; runId: string }> {
  const orderId = await createOrder(database.db, { customerEmail: 'not-an-address' });
  await client.workflow
    .execute(orderConfirmationMail, { workflowId: orderId, taskQueue: worker.taskQueue, args: [orderId] })
    .catch(() => undefined);
  await database.db.query(`UPDATE orders SET customer_email = 'fixed@example.com' WHERE id = $1`, [orderId]);
  return { orderId, runId: (await client.workflow.getHandle(orderId).describe()).runId };
}

describe('an operator act', () => {
  it('records the operator login, whatever $OPERATOR says; --operator is refused before anything is done', async () => {
    const { orderId } = await failedThenFixed();
    const refused = await opsAs(
      operator,
      'resolve',
      orderId,
      '--as',
      'failed',
      '--reason',
      'x',
      '--operator',
      'mallory',
    );
    expect(refused.code).toBe(2);
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);

    const { code, err } = await opsAs(
      operator,
      'resolve',
      orderId,
      '--as',
      'failed',
      '--reason',
      'customer asked',
    );
    expect({ code, err }).toEqual({ code: 0, err: '' });
    expect(await listOperatorActs(database.db, orderId)).toMatchObject([
      { act: 'resolve', operator: operator.user, dbSessionUser: operator.user, reason: 'customer asked' },
    ]);
    expect((await readMailLog(database.db, orderId))?.lastError).toContain(`by ${operator.user}`);
  });

  it('a retry: its reset names the operator login in the history, its act records it', async () => {
    const { orderId, runId } = await failedThenFixed();
    const { code, err } = await opsAs(operator, 'retry', orderId, '--reason', 'address fixed');
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const newRunId = (await client.workflow.getHandle(orderId).describe()).runId;
    expect(newRunId).not.toBe(runId);
    const reset = await resetHistoryReader(client)(orderId, newRunId);
    expect(reset?.reason).toBe(`${OPS_RETRY_RESET_REASON_PREFIX}${operator.user}: address fixed`);
    expect(await listOperatorActs(database.db, orderId)).toMatchObject([
      { act: 'retry', operator: operator.user, reason: 'address fixed' },
    ]);
    expect(await client.workflow.getHandle(orderId).result()).toMatchObject({ result: 'sent' });
  });

  it('a retry that starts the workflow afresh: the started event carries the operator login as identity', async () => {
    const orderId = await createOrder(database.db);
    const { code, err } = await opsAs(operator, 'retry', orderId, '--reason', 'never started');
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const history = await client.workflow.getHandle(orderId).fetchHistory();
    const started = history.events?.find(
      (event) => event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
    );
    expect(started?.workflowExecutionStartedEventAttributes?.identity).toBe(
      `order-mail-ops ${operator.user}@${os.hostname()}`,
    );
    await client.workflow.getHandle(orderId).result();
  });
});

describe('the workers login', () => {
  it('may not act: a retry under it is refused before the workflow is reset, and no act is written', async () => {
    const { orderId, runId } = await failedThenFixed();
    const { code, err } = await opsAs(workerLogin, 'retry', orderId, '--reason', 'as the workers');
    expect(code).toBe(1);
    expect(err).toContain('NOT_AN_OPERATOR');
    expect((await client.workflow.getHandle(orderId).describe()).runId).toBe(runId);
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);
  });

  it('is not taken in place of OPS_DATABASE_URL', async () => {
    const { orderId } = await failedThenFixed();
    const { code, err } = await opsAs(null, 'resolve', orderId, '--as', 'failed', '--reason', 'no login');
    expect(code).toBe(2);
    expect(err).toContain('OPS_DATABASE_URL');
    expect(await listOperatorActs(database.db, orderId)).toEqual([]);
  });
});
