// What the receiver checks of an authentic delivery before it stores anything (issue 22, finding 6 and the
// cross-checks): a stranger's event in a genuine SendGrid batch is counted and skipped while ours are stored;
// an event that names one order but carries another order's send key or message id is skipped for both; a
// Mailgun event, whose data its signature does not cover, is stored only when its send key is ours for the
// order it names, its message id is the one that key makes, and its time is sane.
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { listProviderEvents } from '../../src/webhooks/providerEvents';
import { sendGridPublicKey } from '../../src/webhooks/sendgridWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { SandboxWebhooks } from '../../packages/sandbox/src/webhooks';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let signer: SandboxWebhooks;
let receiver: WebhookServer;
let nextOrder = 7_500_000 + Math.floor(Math.random() * 100_000) * 10;
const order = (): string => String(nextOrder++);
const nowSeconds = (): number => Math.floor(Date.now() / 1000);
const keyOf = (orderId: string): string => `order-confirmation/default/${orderId}/0`;

beforeAll(async () => {
  database = await openTestDatabase('webhook_ingestion');
  signer = new SandboxWebhooks({}, 1);
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: sendGridPublicKey(signer.sendgridPublicKey),
    mailgunSigningKey: signer.mailgunSigningKey,
    maxAgeMs: 300_000,
    log: () => undefined,
  });
});

afterAll(async () => {
  await receiver?.close();
  await signer?.close();
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

function postSendGrid(events: unknown[]) {
  const body = JSON.stringify(events);
  const timestamp = nowSeconds();
  return post('/webhooks/sendgrid', body, {
    'x-twilio-email-event-webhook-signature': signer.signSendGrid(body, timestamp),
    'x-twilio-email-event-webhook-timestamp': String(timestamp),
  });
}

function postMailgun(eventData: Record<string, unknown>) {
  const timestamp = String(nowSeconds());
  const token = randomBytes(25).toString('hex');
  const signature = mailgunSignature(signer.mailgunSigningKey, timestamp, token);
  return post(
    '/webhooks/mailgun',
    JSON.stringify({ signature: { timestamp, token, signature }, 'event-data': eventData }),
  );
}

function sendGridEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    timestamp: nowSeconds(),
    event: 'processed',
    sg_event_id: `evt-${randomBytes(6).toString('hex')}`,
    sg_message_id: `sg-${orderId}.filter-0`,
    order_id: orderId,
    send_key: keyOf(orderId),
    ...overrides,
  };
}

function mailgunEvent(orderId: string, overrides: Record<string, unknown> = {}) {
  return {
    event: 'accepted',
    id: `mg-${randomBytes(6).toString('hex')}`,
    timestamp: Date.now() / 1000,
    message: { headers: { 'message-id': `${keyOf(orderId)}@mg.example.com` } },
    'user-variables': { order_id: orderId, send_key: keyOf(orderId) },
    ...overrides,
  };
}

describe('SendGrid: a genuine batch with strangers in it', () => {
  it('stores ours, counts and skips the rest, and answers 2xx', async () => {
    const ours = order();
    const answer = await postSendGrid([
      sendGridEvent(ours),
      // Another system on the same account: its order ids are not ours.
      sendGridEvent(ours, { order_id: 'INV-2026-0042', send_key: undefined }),
      sendGridEvent(ours, { event: 'delivered', send_key: undefined }),
      sendGridEvent(ours, { event: 'delivered', send_key: 'their-key-1' }),
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ stored: 1, skipped: 3 });
    expect((await listProviderEvents(database.db, ours)).map((event) => event.eventType)).toEqual([
      'accepted',
    ]);
  });
});

describe('an event that names order A but carries order B', () => {
  it("SendGrid: B's send key and message id on A: nothing stored for A or B", async () => {
    const a = order();
    const b = order();
    const answer = await postSendGrid([
      sendGridEvent(a, { send_key: keyOf(b), sg_message_id: `sg-${b}.filter-0`, event: 'bounce' }),
    ]);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ stored: 0, skipped: 1 });
    expect(await listProviderEvents(database.db, a)).toEqual([]);
    expect(await listProviderEvents(database.db, b)).toEqual([]);
  });

  it("Mailgun: B's send key and message id on A: nothing stored", async () => {
    const a = order();
    const b = order();
    const answer = await postMailgun(
      mailgunEvent(a, {
        'user-variables': { order_id: a, send_key: keyOf(b) },
        message: { headers: { 'message-id': `${keyOf(b)}@mg.example.com` } },
      }),
    );
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ stored: 0, skipped: 1 });
    expect(await listProviderEvents(database.db, a)).toEqual([]);
    expect(await listProviderEvents(database.db, b)).toEqual([]);
  });

  it("Mailgun: A's send key with a message id that key does not make: nothing stored", async () => {
    const a = order();
    const answer = await postMailgun(
      mailgunEvent(a, { message: { headers: { 'message-id': `somebody-else-${a}@mg.example.com` } } }),
    );
    expect(answer.body).toMatchObject({ stored: 0, skipped: 1 });
    expect(await listProviderEvents(database.db, a)).toEqual([]);
  });
});

describe('Mailgun: data the signature does not cover is cross-checked', () => {
  it('the 1970-dated "accepted" for order 777 on a fresh signed triple is not stored', async () => {
    const answer = await postMailgun(mailgunEvent('777', { timestamp: 1 }));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ stored: 0, skipped: 1 });
    expect(await listProviderEvents(database.db, '777')).toEqual([]);
  });

  it('an event from the future, or with no send key, is not stored', async () => {
    const a = order();
    const future = await postMailgun(mailgunEvent(a, { timestamp: Date.now() / 1000 + 3_600 }));
    const keyless = await postMailgun(mailgunEvent(a, { 'user-variables': { order_id: a } }));
    expect([future.body.stored, keyless.body.stored]).toEqual([0, 0]);
    expect(await listProviderEvents(database.db, a)).toEqual([]);
  });

  it('an event of ours that passes every check is stored', async () => {
    const a = order();
    expect((await postMailgun(mailgunEvent(a))).body).toMatchObject({ stored: 1, skipped: 0 });
    expect(await listProviderEvents(database.db, a)).toMatchObject([
      { sendKey: keyOf(a), providerMessageId: `<${keyOf(a)}@mg.example.com>` },
    ]);
  });
});
