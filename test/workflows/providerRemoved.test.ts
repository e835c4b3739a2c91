// A provider removed from MAIL_PROVIDERS, and one drained (docs/providers.md, "Draining a provider"). An order
// whose earlier attempt may have reached postmark is bound there: a worker without postmark fails it at once
// with ProviderNotConfigured and sends nothing anywhere; a worker that drains postmark finishes it there while
// new orders go to mailgun. Real HTTP to one sandbox per provider, real Postgres, a Temporal dev server.
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { ActivityDependencies } from '../../src/activities';
import { main } from '../../src/cli/ops';
import { listAttempts, readMailLog } from '../../src/db/orderMailLog';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import { FailureType } from '../../src/shared/failures';
import { orderConfirmationMail } from '../../src/workflows/orderConfirmationMail';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testProviderMailClient,
  testSettings,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let postmark: MailSandbox;
let mailgun: MailSandbox;
let client: Client;
const stops: (() => Promise<void>)[] = [];
/** Both providers, as before the change. */
let before: RunningTestWorker;
/** Postmark removed from MAIL_PROVIDERS. */
let removed: RunningTestWorker;
/** Postmark kept, draining: MAIL_PROVIDERS=postmark,mailgun with MAIL_PROVIDERS_DRAINING=postmark. */
let draining: RunningTestWorker;

async function worker(
  list: [MailProviderName, MailSandbox][],
  drainingProviders: string[] = [],
): Promise<RunningTestWorker> {
  const transports = list.map(([provider, on]) => testProviderMailClient(provider, on.url));
  stops.push(...transports.map((transport) => () => transport.close()));
  const parts: Omit<ActivityDependencies, 'workerIdentity' | 'mailIdentity'> = {
    db: database.db,
    mail: transports[0]!,
    mailProviders: transports,
    drainingProviders,
    settings: testSettings({ unknownOutcomePolicy: 'assume-failed' }),
    providerHealth: { skipAfterFailures: 1_000, skipForMs: 1_000 },
  };
  const running = await startTestWorker(parts);
  stops.push(() => running.stop());
  return running;
}

beforeAll(async () => {
  database = await openTestDatabase('provider_removed');
  postmark = await startMailSandbox();
  mailgun = await startMailSandbox();
  client = await connectTestClient();
  before = await worker([
    ['postmark', postmark],
    ['mailgun', mailgun],
  ]);
  removed = await worker([['mailgun', mailgun]]);
  // Postmark still first in the list: only the draining setting keeps new orders away from it.
  draining = await worker(
    [
      ['postmark', postmark],
      ['mailgun', mailgun],
    ],
    ['postmark'],
  );
}, 120_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await client?.connection.close();
  await mailgun?.close();
  await postmark?.close();
  await database?.close();
});

function runMail(orderId: string, taskQueue: string) {
  return client.workflow.execute(orderConfirmationMail, { workflowId: orderId, taskQueue, args: [orderId] });
}

function sends(on: MailSandbox, orderId: string) {
  return on.requests().filter((request) => request.orderId === orderId && request.method === 'POST');
}

/** The failure types in a failure's chain, outermost first. */
function failureTypes(error: unknown): string[] {
  const types: string[] = [];
  for (let at: unknown = error; at instanceof Error; at = at.cause) {
    if (at instanceof ApplicationFailure && at.type) types.push(at.type);
    if (!(at instanceof TemporalFailure) && !(at instanceof WorkflowFailedError)) break;
  }
  return types;
}

/** A first run on the old list whose attempt was rejected at postmark: the mail is bound there. */
async function orderBoundToPostmark(): Promise<string> {
  const orderId = await createOrder(database.db);
  postmark.queueFault(orderId, { kind: 'status', status: 422 });
  const first = await runMail(orderId, before.taskQueue).then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(failureTypes(first)).toContain(FailureType.MailRejected);
  expect(await readMailLog(database.db, orderId)).toMatchObject({ state: 'failed', provider: 'postmark' });
  return orderId;
}

describe('an order bound to a provider no longer in MAIL_PROVIDERS', () => {
  it('fails at once with ProviderNotConfigured, sends nothing anywhere, and leaves the row as it was', async () => {
    const orderId = await orderBoundToPostmark();
    const postmarkSendsBefore = sends(postmark, orderId).length;
    const startedAt = Date.now();

    const error = await runMail(orderId, removed.taskQueue).then(
      () => undefined,
      (caught: unknown) => caught,
    );

    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect(failureTypes(error)[0]).toBe(FailureType.ProviderNotConfigured);
    // At once: no attempt that fails not sent, no backoff until the run gives up.
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(sends(mailgun, orderId)).toHaveLength(0);
    expect(sends(postmark, orderId)).toHaveLength(postmarkSendsBefore);
    expect(await readMailLog(database.db, orderId)).toMatchObject({
      state: 'failed',
      outcome: 'rejected',
      provider: 'postmark',
      attempts: 1,
    });
    expect(await listAttempts(database.db, orderId)).toHaveLength(1);

    // `npm run ops -- status`, with the workers' MAIL_PROVIDERS, says why and what to do.
    const out: string[] = [];
    const env = {
      DATABASE_URL: database.connectionString,
      // status only reads; the test database's admin login stands in for an operator's.
      OPS_DATABASE_URL: database.connectionString,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: removed.taskQueue,
      MAIL_PROVIDERS: 'mailgun',
    };
    const io = { out: (text: string) => out.push(text), err: (text: string) => out.push(text) };
    expect(await main(['status', orderId, '--json'], env, io)).toBe(0);
    const status = JSON.parse(out.join('')) as { nextStep: string; workflow: { status: string } };
    expect(status.workflow.status).toBe('FAILED');
    expect(status.nextStep).toContain('Bound to postmark');
    expect(status.nextStep).toContain('ProviderNotConfigured');
  }, 40_000);

  it('a worker that drains postmark finishes it at postmark, and sends new orders to mailgun', async () => {
    const orderId = await orderBoundToPostmark();

    const result = await runMail(orderId, draining.taskQueue);

    expect(result).toMatchObject({ result: 'sent', outcome: 'accepted', attempts: 2 });
    expect(postmark.messagesFor(orderId)).toHaveLength(1);
    expect(sends(mailgun, orderId)).toHaveLength(0);

    const fresh = await createOrder(database.db);
    expect(await runMail(fresh, draining.taskQueue)).toMatchObject({ result: 'sent', outcome: 'accepted' });
    expect(mailgun.messagesFor(fresh)).toHaveLength(1);
    expect(sends(postmark, fresh)).toHaveLength(0);
  }, 40_000);
});
