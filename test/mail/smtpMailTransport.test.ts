// The SMTP transport against the SMTP fault sandbox over loopback: every row of docs/smtp-and-inbox.md, checked
// against what the sandbox kept. The phase that separates "not sent" from "unknown" is the one nodemailer's
// errors do not show, so the pairs (drop before DATA, drop after the final '.') matter most here.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SmtpConfig } from '../../src/mail/smtp/smtpMailTransport';
import { classifySmtpAttempt, queueIdOf } from '../../src/mail/smtp/classifySmtpAttempt';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import type { SmtpFault } from '../../packages/sandbox/src/smtp/smtpFaults';
import { startSmtpSandbox, type SmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import { testSmtpTransport, waitFor } from '../support/testKit';

let sandbox: SmtpSandbox;
let authSandbox: SmtpSandbox;
const transports: MailTransport[] = [];
let orderCounter = 0;

function transport(port: number, overrides: Partial<SmtpConfig> = {}): MailTransport {
  const created = testSmtpTransport(port, overrides);
  transports.push(created);
  return created;
}

function mail(): OutgoingMail {
  orderCounter += 1;
  return {
    orderId: String(7_000 + orderCounter),
    to: `customer${orderCounter}@example.com`,
    from: 'Shop <shop@example.com>',
    replyTo: null,
    subject: 'ご注文ありがとうございます',
    text: '山田 太郎 様\n.\nご注文ありがとうございます。',
    html: '<p>山田 太郎 様</p>',
  };
}

beforeAll(async () => {
  sandbox = await startSmtpSandbox();
  authSandbox = await startSmtpSandbox({ auth: { user: 'shop', password: 'right' } });
});

afterAll(async () => {
  for (const created of transports) await created.close();
  await sandbox.close();
  await authSandbox.close();
});

describe('the SMTP transport against the fault sandbox', () => {
  it('accepted: the queue id of the 250 is the provider id; the Message-ID names the order', async () => {
    const outgoing = mail();
    const result = await transport(sandbox.port).send(outgoing);
    const [kept] = sandbox.messagesFor(outgoing.orderId);
    expect(result).toEqual({ outcome: 'accepted', httpStatus: 250, providerMessageId: kept!.queueId });
    expect(kept!.messageId).toBe(`<order-${outgoing.orderId}.confirmation@example.com>`);
  });

  const cases: [string, SmtpFault, string, number][] = [
    ['451 at MAIL', { kind: 'reply', at: 'mail', code: 451 }, 'not_sent', 0],
    ['550 at MAIL', { kind: 'reply', at: 'mail', code: 550 }, 'rejected', 0],
    ['450 at RCPT', { kind: 'reply', at: 'rcpt', code: 450 }, 'not_sent', 0],
    ['550 at RCPT', { kind: 'reply', at: 'rcpt', code: 550 }, 'rejected', 0],
    ['drop before DATA', { kind: 'drop-before-data' }, 'not_sent', 0],
    ['451 at end-of-data', { kind: 'reply', at: 'end-of-data', code: 451 }, 'not_sent', 0],
    ['554 at end-of-data', { kind: 'reply', at: 'end-of-data', code: 554 }, 'rejected', 0],
    ["drop after the final '.'", { kind: 'drop-after-data' }, 'unknown', 1],
    ["no reply after the final '.'", { kind: 'hang-after-data' }, 'unknown', 1],
  ];
  for (const [name, fault, outcome, kept] of cases) {
    it(`${name}: ${outcome}, ${kept} message kept`, async () => {
      const outgoing = mail();
      sandbox.queueFault(outgoing.orderId, fault);
      const result = await transport(sandbox.port).send(outgoing);
      expect(result.outcome).toBe(outcome);
      expect(sandbox.messagesFor(outgoing.orderId)).toHaveLength(kept);
    });
  }

  it('a 421 or 554 greeting: not_sent (the session was refused, not the message)', async () => {
    for (const code of [421, 554]) {
      sandbox.queueGreetingFault({ kind: 'reply', at: 'greeting', code });
      const result = await transport(sandbox.port).send(mail());
      expect(result).toMatchObject({ outcome: 'not_sent', httpStatus: code });
    }
  });

  it('connection refused: not_sent', async () => {
    const closed = await startSmtpSandbox();
    await closed.close();
    expect(await transport(closed.port).send(mail())).toMatchObject({
      outcome: 'not_sent',
      httpStatus: null,
    });
  });

  it('wrong credentials: rejected, naming the settings to check; right ones: accepted', async () => {
    const wrong = await transport(authSandbox.port, { user: 'shop', password: 'wrong' }).send(mail());
    expect(wrong).toMatchObject({ outcome: 'rejected', httpStatus: 535 });
    expect(wrong.outcome === 'rejected' && wrong.reason).toContain('SMTP_USER and SMTP_PASSWORD');
    const right = await transport(authSandbox.port, { user: 'shop', password: 'right' }).send(mail());
    expect(right.outcome).toBe('accepted');
  });

  it('the fence is passed only once a connection is held: a refused connection never reaches it', async () => {
    const closed = await startSmtpSandbox();
    await closed.close();
    let fencesPassed = 0;
    const result = await transport(closed.port).send(mail(), {
      passFenceBy: performance.now() + 1_000,
      passFence: async () => void (fencesPassed += 1),
    });
    expect(result).toMatchObject({ outcome: 'not_sent' });
    expect(fencesPassed).toBe(0);
  });

  it('a pool busy until the fence deadline: not_sent, no fence, no transaction', async () => {
    const pooled = transport(sandbox.port, { poolSize: 1 });
    const slow = mail();
    sandbox.queueFault(slow.orderId, { kind: 'hang-after-data', ms: 700 });
    const first = pooled.send(slow);
    // The first holds the pool's only connection: its message is in, its final reply held back.
    await waitFor('the first message to reach the relay', async () =>
      sandbox.messagesFor(slow.orderId).length > 0 ? true : undefined,
    );
    let fencesPassed = 0;
    const waiting = mail();
    const second = await pooled.send(waiting, {
      passFenceBy: performance.now() + 200,
      passFence: async () => void (fencesPassed += 1),
    });
    expect(second).toMatchObject({ outcome: 'not_sent', errorCode: 'CONNECTION_WAIT_TIMEOUT' });
    expect(fencesPassed).toBe(0);
    expect(sandbox.transactionsFor(waiting.orderId)).toEqual([]);
    expect((await first).outcome).toBe('accepted');
  });

  it('a fence that refuses: no transaction, the error passes through, the session serves the next send', async () => {
    const pooled = transport(sandbox.port, { poolSize: 1 });
    const refusal = new Error('claim lost');
    const refused = mail();
    await expect(
      pooled.send(refused, {
        passFenceBy: performance.now() + 1_000,
        passFence: () => Promise.reject(refusal),
      }),
    ).rejects.toBe(refusal);
    expect(sandbox.transactionsFor(refused.orderId)).toEqual([]);
    expect((await pooled.send(mail())).outcome).toBe('accepted');
  });

  it('reuses a pooled connection after success, and a fresh one after a failure', async () => {
    const pooled = transport(sandbox.port, { poolSize: 1 });
    const first = mail();
    sandbox.queueFault(first.orderId, { kind: 'drop-after-data' });
    expect((await pooled.send(first)).outcome).toBe('unknown');
    for (let i = 0; i < 3; i += 1) expect((await pooled.send(mail())).outcome).toBe('accepted');
  });
});

describe('classifySmtpAttempt', () => {
  it('a drop without a reply code is not_sent before the final dot and unknown after it', () => {
    const drop = Object.assign(new Error('Connection closed unexpectedly'), {
      code: 'ECONNECTION',
      command: 'CONN',
    });
    expect(classifySmtpAttempt({ phase: 'envelope', error: drop, response: null }).outcome).toBe('not_sent');
    expect(classifySmtpAttempt({ phase: 'after-data', error: drop, response: null }).outcome).toBe('unknown');
  });

  it('a 454 at AUTH is transient, a 535 is rejected', () => {
    const auth = (responseCode: number) =>
      Object.assign(new Error('Invalid login'), { code: 'EAUTH', command: 'AUTH PLAIN', responseCode });
    expect(classifySmtpAttempt({ phase: 'auth', error: auth(454), response: null }).outcome).toBe('not_sent');
    expect(classifySmtpAttempt({ phase: 'auth', error: auth(535), response: null }).outcome).toBe('rejected');
  });

  it('reads the queue id of Postfix, SES and Microsoft 365 replies', () => {
    expect(queueIdOf('250 2.0.0 Ok: queued as 4F3A2B1C')).toBe('4F3A2B1C');
    expect(queueIdOf('250 Ok 0100018b5c3c0a4f-1234abcd-000000')).toBe('0100018b5c3c0a4f-1234abcd-000000');
  });

  it('keeps a queue id only in a known format, and never anything address-shaped (issue 22)', () => {
    const known: [string, string][] = [
      ['250 2.0.0 Ok: queued as 4bN3Xh0Zqkz9sM', '4bN3Xh0Zqkz9sM'], // Postfix, long queue ids
      ['250 Ok: queued as Cf2gkH9qQbyrQ1DTxOrI_A', 'Cf2gkH9qQbyrQ1DTxOrI_A'], // SendGrid
      ['250 OK id=1tAbCd-000123-Ef', '1tAbCd-000123-Ef'], // Exim
      ['250 OK id=1tAbCd-00000000123-0aBc', '1tAbCd-00000000123-0aBc'], // Exim 4.97 and later
      ['250 2.0.0 x8QGk5tS012345 Message accepted for delivery', 'x8QGk5tS012345'], // Sendmail
      [
        '250 2.0.0 OK  1733140000 a640c23a62f3a-aa5f1d7e0c1si12345566b.101 - gsmtp',
        'a640c23a62f3a-aa5f1d7e0c1si12345566b.101',
      ], // Gmail
      [
        '250 2.6.0 <AB12@x.prod.outlook.com> [InternalId=16329465528449, Hostname=y.prod.outlook.com] Queued mail for delivery',
        '16329465528449',
      ], // Microsoft 365: its internal id, not the Message-ID
    ];
    for (const [reply, id] of known) expect(queueIdOf(reply), reply).toBe(id);
    for (const reply of [
      '250 2.0.0 Ok: queued for <taro.yamada@example.jp>',
      '250 2.1.5 <taro.yamada@example.jp>... Recipient ok',
      '250 2.0.0 OK <AB12@x.prod.outlook.com>',
      '250 Ok: queued as taro.yamada@example.jp',
      '250 Great success',
      '250 OK',
      '',
    ]) {
      expect(queueIdOf(reply), reply).toBeNull();
    }
  });
});
