// The webhook receiver over real HTTP and real Postgres, fed by the sandbox's SendGrid and Mailgun emulations
// and by hand-made deliveries signed with the same keys: each event is stored once however often it comes;
// an unsigned, badly signed, stale, replayed or malformed delivery is refused with a 4xx and writes nothing.
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { listProviderEvents } from '../../src/webhooks/providerEvents';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { openTestDatabase, testProviderMailClient, waitFor, type TestDatabase } from '../support/testKit';

const MAX_AGE_MS = 300_000;

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let nextOrder = 7_300_000 + Math.floor(Math.random() * 100_000) * 10;

beforeAll(async () => {
  database = await openTestDatabase('webhooks');
  sandbox = await startMailSandbox({ webhooks: { delayMs: 50 } });
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(sandbox.webhookKeys.sendgridPublicKey),
    mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
    maxAgeMs: MAX_AGE_MS,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url });
});

afterAll(async () => {
  await receiver?.close();
  await sandbox?.close();
  await database?.close();
});

async function post(path: string, body: string, headers: Record<string, string> = {}) {
  const response = await request(`${receiver.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(5_000),
  });
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

async function tableCounts(): Promise<{ events: number; deliveries: number }> {
  const { rows } = await database.db.query<{ events: number; deliveries: number }>(
    `SELECT (SELECT count(*)::int FROM order_mail_provider_events) AS events,
            (SELECT count(*)::int FROM order_mail_webhook_deliveries) AS deliveries`,
  );
  return rows[0]!;
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

function sendGridEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    email: 'customer@example.com',
    timestamp: nowSeconds(),
    event: 'processed',
    sg_event_id: `evt-${randomBytes(6).toString('hex')}`,
    sg_message_id: 'sgmsg-1.filter-0',
    order_id: orderId,
    send_key: `order-confirmation/${orderId}`,
    ...overrides,
  };
}

/** A SendGrid delivery as SendGrid makes it: signed over timestamp + body, at `timestamp`. */
function signedSendGrid(body: string, timestamp = nowSeconds()): Record<string, string> {
  return {
    'x-twilio-email-event-webhook-signature': sandbox.signSendGridWebhook(body, timestamp),
    'x-twilio-email-event-webhook-timestamp': String(timestamp),
  };
}

const P256_ORDER = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');

/** The other ECDSA signature of the same message: (r, n - s), DER-encoded, in base64. */
function twinSignature(base64: string): string {
  const der = Buffer.from(base64, 'base64');
  const rLength = der[3]!;
  const r = der.subarray(4, 4 + rLength);
  const s = BigInt(`0x${der.subarray(6 + rLength).toString('hex')}`);
  const twinHex = (P256_ORDER - s).toString(16).padStart(64, '0');
  // A DER INTEGER is signed: a leading byte >= 0x80 needs a zero before it.
  const twin = Buffer.from(
    Number.parseInt(twinHex.slice(0, 2), 16) >= 0x80 ? `00${twinHex}` : twinHex,
    'hex',
  );
  const body = Buffer.concat([Buffer.from([0x02, r.length]), r, Buffer.from([0x02, twin.length]), twin]);
  const twinDer = Buffer.concat([Buffer.from([0x30, body.length]), body]);
  return twinDer.toString('base64');
}

function mailgunBody(
  eventData: Record<string, unknown>,
  signing: { timestamp?: number; token?: string } = {},
) {
  const timestamp = String(signing.timestamp ?? nowSeconds());
  const token = signing.token ?? randomBytes(25).toString('hex');
  const signature = mailgunSignature(sandbox.webhookKeys.mailgunSigningKey, timestamp, token);
  return JSON.stringify({ signature: { timestamp, token, signature }, 'event-data': eventData });
}

function mailgunEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    event: 'accepted',
    id: `mg-${randomBytes(6).toString('hex')}`,
    timestamp: Date.now() / 1000,
    message: { headers: { 'message-id': `order-confirmation/${orderId}@mg.example.com` } },
    'user-variables': { order_id: orderId, send_key: `order-confirmation/${orderId}` },
    ...overrides,
  };
}

describe('a valid signed event is stored once', () => {
  it('SendGrid: delivered three times (each signed anew, as SendGrid redelivers), one row', async () => {
    const orderId = String(nextOrder++);
    const body = JSON.stringify([sendGridEvent(orderId)]);
    const answers = [];
    for (const offset of [0, 1, 2])
      answers.push(await post('/webhooks/sendgrid', body, signedSendGrid(body, nowSeconds() - offset)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(answers.map((answer) => answer.body.stored)).toEqual([1, 0, 0]);
    expect(await listProviderEvents(database.db, orderId)).toMatchObject([
      {
        provider: 'sendgrid',
        eventType: 'accepted',
        sendKey: `order-confirmation/${orderId}`,
        // The prefix of sg_message_id is the X-Message-Id the send recorded.
        providerMessageId: 'sgmsg-1',
      },
    ]);
  });

  it('Mailgun: delivered three times with fresh tokens, one row', async () => {
    const orderId = String(nextOrder++);
    const event = mailgunEvent(orderId);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await post('/webhooks/mailgun', mailgunBody(event)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(await listProviderEvents(database.db, orderId)).toMatchObject([
      {
        provider: 'mailgun',
        eventType: 'accepted',
        providerMessageId: `<order-confirmation/${orderId}@mg.example.com>`,
      },
    ]);
  });

  it.each(['sendgrid', 'mailgun'] as const)(
    '%s through the sandbox: every event posted twice and stored once, a bounce with its reason and no address',
    async (provider) => {
      sandbox.configureWebhooks({ duplicateProbability: 1 });
      try {
        const delivered = String(nextOrder++);
        const bounced = String(nextOrder++);
        const transport = testProviderMailClient(provider, sandbox.url);
        const base = {
          from: 'shop@example.com',
          replyTo: null,
          subject: 'ご注文ありがとうございます',
          text: 'x',
          html: '<p>x</p>',
        };
        await transport.send({ ...base, orderId: delivered, to: 'customer@example.com' });
        await transport.send({ ...base, orderId: bounced, to: 'bounce-me@example.com' });
        await transport.close();
        await sandbox.webhooksSettled();
        const posted = sandbox
          .webhookDeliveries()
          .filter((delivery) => delivery.orderId === delivered || delivery.orderId === bounced);
        // Two events per message, each posted twice (a posting the receiver was too slow for is retried).
        expect(posted.filter((delivery) => delivery.attempt === 1)).toHaveLength(8);
        expect(posted.filter((delivery) => delivery.status === 200)).toHaveLength(8);
        expect((await listProviderEvents(database.db, delivered)).map((event) => event.eventType)).toEqual([
          'accepted',
          'delivered',
        ]);
        const bounce = await listProviderEvents(database.db, bounced);
        expect(bounce.map((event) => event.eventType)).toEqual(['accepted', 'bounced']);
        expect(bounce[1]!.reason).toMatch(/mailbox does not exist/);
        expect(bounce[1]!.reason).not.toMatch(/bounce-me@example\.com/);
      } finally {
        sandbox.configureWebhooks({ duplicateProbability: 0 });
      }
    },
  );
});

describe('refused with a 4xx, nothing written', () => {
  async function refusedWithNothingWritten(
    send: () => Promise<{ status: number }>,
    status: number,
  ): Promise<void> {
    const before = await tableCounts();
    expect((await send()).status).toBe(status);
    expect(await tableCounts()).toEqual(before);
  }

  it('SendGrid: no signature, a bad signature, an old timestamp, a replay, a malformed body', async () => {
    const orderId = String(nextOrder++);
    const body = JSON.stringify([sendGridEvent(orderId)]);
    await refusedWithNothingWritten(() => post('/webhooks/sendgrid', body), 401);
    const signed = signedSendGrid(body);
    // Signed for other bytes: the event's fields were changed after signing.
    const tampered = body.replace('"processed"', '"delivered"');
    await refusedWithNothingWritten(() => post('/webhooks/sendgrid', tampered, signed), 401);
    const old = nowSeconds() - MAX_AGE_MS / 1000 - 60;
    await refusedWithNothingWritten(() => post('/webhooks/sendgrid', body, signedSendGrid(body, old)), 401);
    // The very same signed request a second time.
    expect((await post('/webhooks/sendgrid', body, signed)).status).toBe(200);
    await refusedWithNothingWritten(() => post('/webhooks/sendgrid', body, signed), 409);
    const notJson = 'processed,order_id=1';
    await refusedWithNothingWritten(() => post('/webhooks/sendgrid', notJson, signedSendGrid(notJson)), 400);
    const noEventId = JSON.stringify([
      sendGridEvent(orderId, { sg_event_id: undefined, event: 'delivered' }),
    ]);
    await refusedWithNothingWritten(
      () => post('/webhooks/sendgrid', noEventId, signedSendGrid(noEventId)),
      400,
    );
    expect(await listProviderEvents(database.db, orderId)).toHaveLength(1);
  });

  it('SendGrid: the same signed request with its signature spelled otherwise is still a replay', async () => {
    const orderId = String(nextOrder++);
    const body = JSON.stringify([sendGridEvent(orderId)]);
    const signed = signedSendGrid(body);
    const signature = signed['x-twilio-email-event-webhook-signature']!;
    expect((await post('/webhooks/sendgrid', body, signed)).status).toBe(200);
    const respelled = [
      // base64 without its padding, with spaces in it: the same bytes.
      signature.replace(/=+$/, ''),
      `${signature.slice(0, 20)} ${signature.slice(20)}`,
      // ECDSA's twin signature (r, n - s): other bytes that verify just the same.
      twinSignature(signature),
    ];
    for (const spelling of respelled) {
      const headers = { ...signed, 'x-twilio-email-event-webhook-signature': spelling };
      await refusedWithNothingWritten(() => post('/webhooks/sendgrid', body, headers), 409);
    }
    expect(await listProviderEvents(database.db, orderId)).toHaveLength(1);
  });

  it('Mailgun: no signature, a bad signature, an old timestamp, a replayed token, a malformed event', async () => {
    const orderId = String(nextOrder++);
    const event = mailgunEvent(orderId);
    await refusedWithNothingWritten(
      () => post('/webhooks/mailgun', JSON.stringify({ 'event-data': event })),
      401,
    );
    const forged = JSON.parse(mailgunBody(event)) as { signature: { signature: string } };
    forged.signature.signature = 'a'.repeat(64);
    await refusedWithNothingWritten(() => post('/webhooks/mailgun', JSON.stringify(forged)), 401);
    const old = nowSeconds() - MAX_AGE_MS / 1000 - 60;
    await refusedWithNothingWritten(
      () => post('/webhooks/mailgun', mailgunBody(event, { timestamp: old })),
      401,
    );
    // Mailgun's signature covers the timestamp and the token, not the event: a captured signature replayed
    // with an event of the attacker's making must be refused by its token.
    const token = randomBytes(25).toString('hex');
    const timestamp = nowSeconds();
    expect((await post('/webhooks/mailgun', mailgunBody(event, { token, timestamp }))).status).toBe(200);
    const other = mailgunEvent(orderId, { event: 'delivered' });
    await refusedWithNothingWritten(
      () => post('/webhooks/mailgun', mailgunBody(other, { token, timestamp })),
      409,
    );
    await refusedWithNothingWritten(
      () => post('/webhooks/mailgun', mailgunBody({ ...other, id: undefined })),
      400,
    );
    await refusedWithNothingWritten(() => post('/webhooks/mailgun', '{"signature":'), 400);
    expect((await listProviderEvents(database.db, orderId)).map((row) => row.eventType)).toEqual([
      'accepted',
    ]);
  });

  it('a provider whose key is not configured has no endpoint at all', async () => {
    const server = await startWebhookServer({
      db: database.db,
      host: '127.0.0.1',
      port: 0,
      sendgridPublicKey: null,
      mailgunSigningKey: sandbox.webhookKeys.mailgunSigningKey,
      maxAgeMs: MAX_AGE_MS,
      log: () => undefined,
    });
    try {
      const body = JSON.stringify([sendGridEvent(String(nextOrder++))]);
      const response = await request(`${server.url}/webhooks/sendgrid`, {
        method: 'POST',
        headers: signedSendGrid(body),
        body,
      });
      await response.body.dump();
      expect(response.statusCode).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('events that are not ours, or not kept', () => {
  it('are answered 200 and not stored: no order_id, an open, a temporary failure', async () => {
    const orderId = String(nextOrder++);
    const body = JSON.stringify([
      sendGridEvent(orderId, { order_id: undefined }),
      sendGridEvent(orderId, { event: 'open' }),
    ]);
    const before = await tableCounts();
    expect(await post('/webhooks/sendgrid', body, signedSendGrid(body))).toMatchObject({
      status: 200,
      body: { stored: 0 },
    });
    const temporary = mailgunEvent(orderId, { event: 'failed', severity: 'temporary' });
    expect((await post('/webhooks/mailgun', mailgunBody(temporary))).status).toBe(200);
    const after = await tableCounts();
    expect(after.events).toBe(before.events);
    await waitFor('nothing for the order', async () =>
      (await listProviderEvents(database.db, orderId)).length === 0 ? true : undefined,
    );
  });
});
