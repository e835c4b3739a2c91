// Mailgun's signature is inside its JSON body, so the receiver must parse the body to find it (issue 22,
// finding 11: "parses Mailgun bodies before checking the signature"). What it may cost, and what may be read
// before the signature verifies, is bounded: a Mailgun body larger than a Mailgun event is refused 413 unparsed,
// even when correctly signed; what is not a JSON object or carries no signature is refused without a parse;
// and nothing of event-data is interpreted before the check (a malformed event-data under a bad signature is
// "unsigned", not "malformed"). Every refusal writes nothing (rows compared before and after). Real server,
// real Postgres, HTTP over loopback.
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SandboxWebhooks } from '../../packages/sandbox/src/webhooks';
import { MAILGUN_MAX_BODY_BYTES, mailgunSignature } from '../../src/webhooks/mailgunWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let signer: SandboxWebhooks;
let receiver: WebhookServer;
const orderId = String(8_100_000 + Math.floor(Math.random() * 100_000));
const sendKey = `order-confirmation/default/${orderId}/0`;

beforeAll(async () => {
  database = await openTestDatabase('mailgun_before_signature');
  signer = new SandboxWebhooks({}, 1);
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: null,
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

async function rows(): Promise<string> {
  const { rows: counted } = await database.db.query<{ events: string; tokens: string }>(
    `SELECT (SELECT count(*) FROM order_mail_provider_events)::text AS events,
            (SELECT count(*) FROM order_mail_webhook_deliveries)::text AS tokens`,
  );
  return JSON.stringify(counted[0]);
}

async function post(body: string): Promise<number> {
  const response = await request(`${receiver.url}/webhooks/mailgun`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(5_000),
  });
  await response.body.dump();
  return response.statusCode;
}

function signed(eventData: unknown, extra: Record<string, unknown> = {}): string {
  const timestamp = String(Math.floor(Date.now() / 1000));
  const token = randomBytes(25).toString('hex');
  return JSON.stringify({
    signature: { timestamp, token, signature: mailgunSignature(signer.mailgunSigningKey, timestamp, token) },
    'event-data': eventData,
    ...extra,
  });
}

const event = {
  event: 'accepted',
  id: `mg-${randomBytes(6).toString('hex')}`,
  timestamp: Date.now() / 1000,
  message: { headers: { 'message-id': `${sendKey}@mg.example.com` } },
  'user-variables': { order_id: orderId, send_key: sendKey },
};

it('refuses, with nothing written: oversized (even signed), not JSON, no signature, and a bad signature before event-data', async () => {
  const before = await rows();
  // Correctly signed, with a genuine event, but padded past the size of any Mailgun event: never parsed.
  const oversized = signed(event, { padding: 'x'.repeat(100_000) });
  // Past a Mailgun event's cap, inside the receiver's general one (1 MiB, which SendGrid's batches need).
  expect(Buffer.byteLength(oversized)).toBeGreaterThan(MAILGUN_MAX_BODY_BYTES ?? 0);
  expect(Buffer.byteLength(oversized)).toBeLessThan(1_048_576);
  expect(await post(oversized)).toBe(413);
  expect(await post('not json at all')).toBe(400);
  expect(await post('[1, 2, 3]')).toBe(400);
  expect(await post(JSON.stringify({ 'event-data': event }))).toBe(401);
  // A bad signature is refused as unsigned, whatever event-data holds: it is not looked at before the check.
  const forged = JSON.parse(signed('not an object')) as { signature: { signature: string } };
  forged.signature.signature = '0'.repeat(64);
  expect(await post(JSON.stringify(forged))).toBe(401);
  expect(await rows()).toBe(before);
  // The server still answers, and a genuine event of normal size is stored.
  expect(await post(signed(event))).toBe(200);
  expect(await rows()).not.toBe(before);
});
