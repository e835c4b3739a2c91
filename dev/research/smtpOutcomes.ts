// The loopback experiment behind docs/smtp-and-inbox.md: every fault of the SMTP sandbox, sent to with (a)
// nodemailer's ordinary transport and (b) SMTPConnection with the transport's own phase tracking. Prints what
// each reports. Run: npx tsx dev/research/smtpOutcomes.ts
import { Readable } from 'node:stream';
import { createTransport } from 'nodemailer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { startSmtpSandbox } from '../../packages/sandbox/src/smtp/smtpSandbox';
import type { SmtpFault, ReplyFault } from '../../packages/sandbox/src/smtp/smtpFaults';

interface Case {
  name: string;
  fault?: SmtpFault;
  greeting?: ReplyFault;
  refused?: boolean;
  badAuth?: boolean;
}

const CASES: Case[] = [
  { name: 'accepted' },
  { name: 'refused', refused: true },
  { name: '421 at greeting', greeting: { kind: 'reply', at: 'greeting', code: 421 } },
  { name: '554 at greeting', greeting: { kind: 'reply', at: 'greeting', code: 554 } },
  { name: 'auth 535', badAuth: true },
  { name: '451 at MAIL', fault: { kind: 'reply', at: 'mail', code: 451 } },
  { name: '550 at MAIL', fault: { kind: 'reply', at: 'mail', code: 550 } },
  { name: '450 at RCPT', fault: { kind: 'reply', at: 'rcpt', code: 450 } },
  { name: '550 at RCPT', fault: { kind: 'reply', at: 'rcpt', code: 550 } },
  { name: 'drop before DATA', fault: { kind: 'drop-before-data' } },
  { name: '451 at end-of-data', fault: { kind: 'reply', at: 'end-of-data', code: 451 } },
  { name: '554 at end-of-data', fault: { kind: 'reply', at: 'end-of-data', code: 554 } },
  { name: 'drop after end-of-data', fault: { kind: 'drop-after-data' } },
  { name: 'hang after end-of-data (1.5 s socket timeout)', fault: { kind: 'hang-after-data' } },
];

const RAW = (orderId: string) =>
  `From: shop@example.com\r\nTo: a@example.com\r\nSubject: test\r\nX-Order-Id: ${orderId}\r\nMessage-ID: <order-${orderId}@example.com>\r\n\r\nhello\r\n`;

function describe(error: unknown): string {
  if (error === null) return 'ok';
  const e = error as { code?: string; command?: string; responseCode?: number };
  return `code=${e.code} command=${e.command} responseCode=${e.responseCode ?? '-'}`;
}

async function viaTransport(port: number, orderId: string, auth: boolean): Promise<string> {
  const transport = createTransport({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    socketTimeout: 1_500,
    ...(auth ? { auth: { user: 'u', pass: 'wrong' } } : {}),
  });
  try {
    const info = await transport.sendMail({
      envelope: { from: 'shop@example.com', to: ['a@example.com'] },
      raw: RAW(orderId),
      dsn: { id: `order-${orderId}` },
    });
    return `ok response=${JSON.stringify(info.response)}`;
  } catch (error) {
    return describe(error);
  } finally {
    transport.close();
  }
}

async function viaConnection(port: number, orderId: string, auth: boolean): Promise<string> {
  const connection = new SMTPConnection({
    host: '127.0.0.1',
    port,
    secure: false,
    ignoreTLS: true,
    socketTimeout: 1_500,
  });
  // A failed connect is reported as an 'error' event, not through connect()'s callback.
  let lastError: unknown = null;
  connection.on('error', (error: Error) => {
    lastError = error;
  });
  let bodyHandedOver = false;
  try {
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      connection.connect((err) => (err ? reject(err) : resolve()));
    });
    if (auth) {
      await new Promise<void>((resolve, reject) =>
        connection.login({ credentials: { user: 'u', pass: 'wrong' } }, (err) =>
          err ? reject(err) : resolve(),
        ),
      );
    }
    const body = Readable.from([Buffer.from(RAW(orderId))]);
    body.on('end', () => (bodyHandedOver = true));
    const info = await new Promise<SMTPConnection.SentMessageInfo>((resolve, reject) =>
      connection.send(
        {
          from: 'shop@example.com',
          to: ['a@example.com'],
          dsn: { envid: `order-${orderId}` },
        },
        body,
        (err, result) => (err ? reject(err) : resolve(result)),
      ),
    );
    return `ok response=${JSON.stringify(info.response)} bodyHandedOver=${bodyHandedOver}`;
  } catch (error) {
    const event = lastError !== null && lastError !== error ? ` (error event: ${describe(lastError)})` : '';
    return `${describe(error)} bodyHandedOver=${bodyHandedOver}${event}`;
  } finally {
    connection.close();
  }
}

async function main(): Promise<void> {
  let n = 0;
  for (const offerPipelining of [true, false]) {
    console.log(`\n## server ${offerPipelining ? 'offers' : 'does not offer'} PIPELINING`);
    for (const testCase of CASES) {
      const row: string[] = [testCase.name];
      for (const client of [viaTransport, viaConnection]) {
        n += 1;
        const orderId = String(1000 + n);
        const sandbox = await startSmtpSandbox({
          offerPipelining,
          ...(testCase.badAuth ? { auth: { user: 'u', password: 'right' } } : {}),
        });
        if (testCase.fault !== undefined) sandbox.queueFault(orderId, testCase.fault);
        if (testCase.greeting !== undefined) sandbox.queueGreetingFault(testCase.greeting);
        const port = sandbox.port;
        if (testCase.refused) await sandbox.close();
        const started = Date.now();
        const seen = await client(port, orderId, testCase.badAuth === true);
        row.push(`${seen} kept=${sandbox.messagesFor(orderId).length} (${Date.now() - started} ms)`);
        await sandbox.close();
      }
      console.log(row.join('\n    '));
    }
  }
}

void main();
