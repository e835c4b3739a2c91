// The SMTP sandbox's "relay down for a while" (the chaos runner's refused-connection windows over SMTP): new
// connections are refused, sessions a pool kept open are cut so no send slips past on them, and afterwards the
// same port takes mail again. A refused send is not sent and nothing is kept. The window itself is
// packages/sandbox/src/refusalWindow.ts, shared with the HTTP sandbox: a port someone else took in the
// meantime is tried again for a while, and if it stays taken, whenListening() says so instead of leaving the
// runner waiting.

import { connect, createServer, type Server } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
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

  await sandbox.refuseConnectionsFor(3_000);
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

/** Someone else's listener on the sandbox's port while the sandbox is not listening. */
async function occupy(port: number): Promise<Server> {
  const blocker = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    blocker.once('error', reject);
    blocker.listen(port, '127.0.0.1', () => resolve());
  });
  return blocker;
}

it('a port taken during the window: it keeps trying to bind, and listens again once the port is free', async () => {
  await sandbox.refuseConnectionsFor(200);
  const blocker = await occupy(sandbox.port);
  // The first attempts to listen again fail; freeing the port within the retries lets a later one succeed.
  await new Promise((resolve) => setTimeout(resolve, 700));
  await new Promise<void>((resolve) => blocker.close(() => resolve()));
  await sandbox.whenListening();
  expect((await pooled.send(mail('8104'))).outcome).toBe('accepted');
});

it('a port taken for good: whenListening() says so instead of waiting forever, and a later window recovers', async () => {
  await sandbox.refuseConnectionsFor(100);
  const blocker = await occupy(sandbox.port);
  await expect(sandbox.whenListening()).rejects.toMatchObject({ code: 'EADDRINUSE' });
  await new Promise<void>((resolve) => blocker.close(() => resolve()));

  await sandbox.refuseConnectionsFor(100);
  await sandbox.whenListening();
  expect((await pooled.send(mail('8105'))).outcome).toBe('accepted');
});
