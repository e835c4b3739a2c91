// The sandbox's lying webhooks (packages/sandbox/src/webhookLies.ts), the chaos profile's lying provider,
// against the real receiver and Postgres: every kind is told for a SendGrid and a Mailgun message, each is
// counted by kind with the receiver's answer, none is believed, and nothing is stored for the order the lies
// name falsely.
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { WEBHOOK_LIE_KINDS } from '../../packages/sandbox/src/webhookLies';
import { listProviderEvents } from '../../src/webhooks/providerEvents';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { openTestDatabase, testProviderMailClient, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let nextOrder = 7_700_000 + Math.floor(Math.random() * 100_000) * 100;

beforeAll(async () => {
  database = await openTestDatabase('webhook_lies');
  sandbox = await startMailSandbox({ webhooks: { delayMs: 20 } });
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
    mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
    maxAgeMs: 300_000,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url, lieProbability: 1 });
});

afterAll(async () => {
  await receiver?.close();
  await sandbox?.close();
  await database?.close();
});

/** One mail through the provider's real client to the sandbox, which then tells its webhook lie about it. */
async function sendOneMail(provider: 'sendgrid' | 'mailgun', orderId: string): Promise<void> {
  const transport = testProviderMailClient(provider, sandbox.url);
  await transport.send({
    orderId,
    to: 'customer@example.com',
    from: 'shop@example.com',
    replyTo: null,
    subject: 'ご注文ありがとうございます',
    text: 'x',
    html: '<p>x</p>',
  });
  await transport.close();
}

it('tells every kind of lie for both providers; each is refused or skipped, none believed, counted by kind', async () => {
  const falselyNamed: string[] = [];
  for (const kind of WEBHOOK_LIE_KINDS) {
    sandbox.configureWebhooks({ lieKinds: [kind] });
    for (const provider of ['sendgrid', 'mailgun'] as const) {
      const orderId = String((nextOrder += 2));
      falselyNamed.push(String(nextOrder + 1));
      await sendOneMail(provider, orderId);
    }
    await sandbox.webhooksSettled();
  }
  const lies = sandbox.webhookLies();
  for (const kind of WEBHOOK_LIE_KINDS) {
    expect(lies[kind], kind).toMatchObject({ posted: 2, believed: 0, failed: 0 });
  }
  expect(lies['other-order'].skipped + lies['strangers-mixed'].skipped).toBe(4);
  expect(
    WEBHOOK_LIE_KINDS.filter((kind) => !kind.includes('-')).every((kind) => lies[kind].refused === 2),
  ).toBe(true);
  for (const orderId of falselyNamed) expect(await listProviderEvents(database.db, orderId)).toEqual([]);
});

it("a replay of a posting the receiver never took is a provider's retry, not a lie: stored, and not counted as believed", async () => {
  // In front of the receiver, over loopback: the first posting gets a 503 (its database restarting), every
  // later one goes through. The chaos run once judged the replay's storing as a believed lie.
  let seen = 0;
  const front = createServer((request, response) => {
    seen += 1;
    if (seen === 1) {
      request.resume();
      response.writeHead(503).end();
      return;
    }
    const forward = httpRequest(
      new URL(request.url ?? '/', receiver.url),
      { method: request.method, headers: request.headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const { port } = front.address() as AddressInfo;
  try {
    const before = sandbox.webhookLies().replayed;
    // The message's own events lost: the lie's two postings are the only ones, so the 503 falls on its first.
    sandbox.configureWebhooks({
      url: `http://127.0.0.1:${port}`,
      lieKinds: ['replayed'],
      lossProbability: 1,
    });
    const orderId = String((nextOrder += 2));
    await sendOneMail('mailgun', orderId);
    await sandbox.webhooksSettled();
    const postings = sandbox.webhookLiePostings().filter((posting) => posting.orderId === orderId);
    expect(postings.map((posting) => [posting.isLie, posting.answer])).toEqual([
      [false, 'failed'],
      [false, 'believed'],
    ]);
    expect(sandbox.webhookLies().replayed).toEqual(before);
    expect((await listProviderEvents(database.db, orderId)).length).toBe(1);
  } finally {
    sandbox.configureWebhooks({ url: receiver.url, lossProbability: 0 });
    await new Promise((resolve) => front.close(resolve));
  }
});
