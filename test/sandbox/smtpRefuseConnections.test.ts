// The SMTP sandbox's "relay down for a while" (the chaos runner's refused-connection windows over SMTP): new
// connections are refused, sessions a pool kept open are cut so no send slips past on them, and afterwards the
// same port takes mail again. A refused send is not sent and nothing is kept.

import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import { startSmtpSandbox, type SmtpSandbox } from '../../src/sandbox/smtp/smtpSandbox';
import { testSmtpTransport } from '../support/testKit';

let sandbox: SmtpSandbox;
let pooled: MailTransport;

beforeAll(async () => {
  sandbox = await startSmtpSandbox();
  pooled = testSmtpTransport(sandbox.port, { poolSize: 1 });
});

afterAll(async () => {
  await pooled.close();
  await sandbox.close();
});

const mail = (orderId: string): OutgoingMail => ({
  orderId,
  to: `customer${orderId}@example.com`,
  from: 'Shop <shop@example.com>',
  replyTo: null,
  subject: 'ご注文ありがとうございます',
  text: '山田 太郎 様',
  html: '<p>山田 太郎 様</p>',
});

/** 'connected', or the error code of the failed connect. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

it('refuses and cuts connections for the window, then takes mail on the same port again', async () => {
  // A pooled session is open before the window starts.
  expect((await pooled.send(mail('8101'))).outcome).toBe('accepted');

  await sandbox.refuseConnectionsFor(1_500);
  expect(await connectOutcome(sandbox.port)).toBe('ECONNREFUSED');
  const during = await pooled.send(mail('8102'));
  expect(during.outcome).toBe('not_sent');
  expect(sandbox.messagesFor('8102')).toHaveLength(0);

  await sandbox.whenListening();
  expect(await connectOutcome(sandbox.port)).toBe('connected');
  expect((await pooled.send(mail('8103'))).outcome).toBe('accepted');
  expect(sandbox.messagesFor('8103')).toHaveLength(1);
});

it('refuses a window that is not a positive whole number of milliseconds', async () => {
  await expect(sandbox.refuseConnectionsFor(0)).rejects.toThrow(/positive integer/);
});
