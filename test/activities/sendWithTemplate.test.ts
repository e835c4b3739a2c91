// The send renders with the shop's templates (MAIL_TEMPLATE_DIR) and records which template it used with the
// attempt (migration 0061); an order a template cannot render is refused before the fence, nothing sent.
// Real Postgres and the sandbox over loopback.
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type ClaimResult } from '../../src/activities';
import { loadMailTemplates, type MailTemplates } from '../../src/mail/template/mailTemplates';
import type { MailTransport } from '../../src/mail/types';
import { FailureType } from '../../src/shared/failures';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import {
  createOrder,
  openTestDatabase,
  testMailClient,
  testSettings,
  type TestDatabase,
} from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let mail: MailTransport;
let dir: string;

beforeAll(async () => {
  database = await openTestDatabase('send_with_template');
  sandbox = await startMailSandbox();
  mail = testMailClient(sandbox.url);
  dir = mkdtempSync(path.join(tmpdir(), 'send-template-'));
});
afterAll(async () => {
  await mail.close();
  await sandbox.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

function templates(name: string, html: string): MailTemplates {
  const folder = mkdtempSync(path.join(dir, `${name}-`));
  const files = {
    'mail.json': JSON.stringify({ name, locale: 'en-US', timeZone: 'UTC' }),
    'subject.liquid': 'Order {{ order.id }} for {{ order.customerName }}',
    'text.liquid': 'Hi {{ order.customerName }}, total {{ order.total | money }}\n',
    'html.liquid': html,
  };
  for (const [file, content] of Object.entries(files)) writeFileSync(path.join(folder, file), content);
  return loadMailTemplates(folder);
}

function activities(mailTemplates: MailTemplates) {
  return createActivities({
    db: database.db,
    mail,
    mailTemplates,
    mailIdentity: { from: 'shop@example.com', replyTo: null, subject: 'unused' },
    settings: testSettings(),
    workerIdentity: 'template-test',
  });
}

async function claimAndSend(acts: ReturnType<typeof activities>, orderId: string) {
  const env = new MockActivityEnvironment({
    namespace: 'default',
    workflowExecution: { workflowId: orderId, runId: 'run-a' },
    startToCloseTimeoutMs: testSettings().sendTimeoutMs,
  });
  const claim = await env.run<
    [{ orderId: string; issuedAtMs: number }],
    ClaimResult,
    typeof acts.claimOrderMail
  >(acts.claimOrderMail, { orderId, issuedAtMs: Date.now() });
  if (claim.kind !== 'claimed') throw new Error(`expected a claim, got ${claim.kind}`);
  const input = {
    orderId,
    claimToken: claim.claimToken,
    attempt: claim.attempt,
    idempotencyKey: claim.idempotencyKey,
  };
  const sent = await env
    .run<[typeof input], Awaited<ReturnType<typeof acts.sendOrderMail>>, typeof acts.sendOrderMail>(
      acts.sendOrderMail,
      input,
    )
    .then(
      (accepted) => ({ accepted, failure: null }),
      (failure: unknown) => ({ accepted: null, failure: failure as ApplicationFailure }),
    );
  return { env, claim, sent };
}

describe('the send with the shop’s template', () => {
  it('renders the template and records its name and hash with the attempt', async () => {
    const shop = templates('en-shop', '<p>Hi {{ order.customerName }}</p>\n');
    const acts = activities(shop);
    const orderId = await createOrder(database.db, { customerName: 'Ada <Lovelace>' });
    const { env, claim, sent } = await claimAndSend(acts, orderId);
    expect(sent.failure).toBeNull();
    const [message, ...more] = sandbox.messagesFor(orderId);
    expect(more).toEqual([]);
    expect(message).toMatchObject({
      subject: `Order ${orderId} for Ada <Lovelace>`,
      text: 'Hi Ada <Lovelace>, total ¥8,200\n',
      html: '<p>Hi Ada &lt;Lovelace&gt;</p>\n',
    });
    await env.run(acts.recordOrderMailOutcome, {
      orderId,
      claimToken: claim.kind === 'claimed' ? claim.claimToken : '',
      attempt: 1,
      state: 'sent' as const,
      outcome: 'accepted' as const,
      unknownPolicy: null,
      providerMessageId: sent.accepted!.providerMessageId,
      httpStatus: sent.accepted!.httpStatus,
      error: null,
      expectDispatched: null,
    });
    const { rows } = await database.db.query(
      `SELECT template_name, template_sha256 FROM order_mail_attempts WHERE order_id = $1`,
      [orderId],
    );
    expect(rows).toEqual([{ template_name: 'en-shop', template_sha256: shop.sha256 }]);
  });

  it('refuses an order its template cannot render (a link that is not https): nothing sent, the row failed', async () => {
    const linked = templates('en-link', '<a href="{{ order.customerName | https_url }}">track</a>\n');
    const acts = activities(linked);
    const orderId = await createOrder(database.db, { customerName: 'javascript:alert(1)' });
    const { sent } = await claimAndSend(acts, orderId);
    expect(sent.failure?.type).toBe(FailureType.MailRefused);
    expect(sent.failure?.details?.[0]).toMatchObject({
      outcome: 'rejected',
      errorCode: 'MAIL_RENDER_FAILED',
    });
    expect(sandbox.messagesFor(orderId)).toEqual([]);
    const { rows } = await database.db.query(
      `SELECT dispatched_at, dispatch_template_name FROM order_mail_log WHERE order_id = $1`,
      [orderId],
    );
    expect(rows).toEqual([{ dispatched_at: null, dispatch_template_name: null }]);
  });
});
