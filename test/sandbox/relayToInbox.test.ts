// The HTTP sandbox relays to the inbox exactly what it accepted: accept-then-drop and accept-then-hang too
// (the provider took those), never a rejected or unprocessed request. The inbox here is the SMTP sandbox,
// which counts what it received; MailDev speaks the same SMTP (test/browser covers it).

import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { Fault } from '../../packages/sandbox/src/faults';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { testMailClient } from '../support/testKit';

let inbox: SmtpSandbox;
let sandbox: MailSandbox;
let client: MailTransport;

beforeAll(async () => {
  inbox = await startSmtpSandbox();
  sandbox = await startMailSandbox({ relayTo: { host: inbox.host, port: inbox.port } });
  client = testMailClient(sandbox.url);
});

afterAll(async () => {
  await client.close();
  await sandbox.close();
  await inbox.close();
});

function mail(orderId: string): OutgoingMail {
  return {
    orderId,
    to: `customer${orderId}@example.com`,
    from: 'Shop <shop@example.com>',
    replyTo: null,
    subject: 'ご注文ありがとうございます',
    text: '佐藤 花子 様',
    html: '<p>佐藤 花子 様</p>',
  };
}

it('relays each accepted message once, with its order id, and nothing else', async () => {
  const cases: [string, Fault | null, number][] = [
    ['9001', null, 1],
    ['9002', { kind: 'accept-then-drop' }, 1],
    ['9003', { kind: 'accept-then-hang', ms: 2_000 }, 1],
    ['9004', { kind: 'status', status: 422 }, 0],
    ['9005', { kind: 'status', status: 503 }, 0],
    ['9006', { kind: 'drop-without-processing' }, 0],
  ];
  for (const [orderId, fault] of cases) {
    if (fault !== null) sandbox.queueFault(orderId, fault);
    await client.send(mail(orderId));
  }
  await sandbox.relaysSettled();
  for (const [orderId, , relayed] of cases) {
    expect(inbox.messagesFor(orderId), `order ${orderId}`).toHaveLength(relayed);
    expect(sandbox.messagesFor(orderId)).toHaveLength(relayed);
  }
  const [first] = inbox.messagesFor('9001');
  expect(first!.subject).toContain('=?UTF-8?');
  expect(first!.to).toEqual(['customer9001@example.com']);
});
