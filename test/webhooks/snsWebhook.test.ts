// SES events by SNS at /webhooks/ses, over real HTTP and real Postgres: the sandbox sends through its SES
// emulation and SNS posts the Send and Delivery events, signed with a certificate made for this run; messages
// made by hand cover each refusal (forged, certificate from a host not allowed, stale, replayed, a topic not
// allowed, a SubscribeURL elsewhere), and every refused one leaves both tables as they were. A receiver that was
// not told to trust the test certificate's origin refuses even the genuine ones, and the environment
// configuration cannot tell it to.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { SANDBOX_SNS_TOPIC_ARN } from '../../packages/sandbox/src/sns';
import { DEFAULT_DEPLOYMENT_ID } from '../../src/evidence/messageIdentity';
import { orderConfirmationSendKey } from '../../src/mail/sendKey';
import type { ReceivedMessage } from '../../packages/sandbox/src/records';
import { listProviderEvents, storeDelivery } from '../../src/webhooks/providerEvents';
import { loadWebhookConfig } from '../../src/webhooks/webhookConfig';
import { DEFAULT_SNS_CERT_HOST_PATTERN } from '../../src/webhooks/snsWebhook';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { openTestDatabase, testProviderMailClient, waitFor, type TestDatabase } from '../support/testKit';

const MAX_AGE_MS = 300_000;
/** SNS_MAX_RETRY_S's default: SNS retries an HTTP/S delivery for an hour at most. */
const MAX_RETRY_MS = 3_600_000;

let database: TestDatabase;
let sandbox: MailSandbox;
let receiver: WebhookServer;
let untrusting: WebhookServer;
let nextOrder = 8_400_000 + Math.floor(Math.random() * 100_000) * 10;

beforeAll(async () => {
  database = await openTestDatabase('sns-webhooks');
  sandbox = await startMailSandbox({ webhooks: { delayMs: 50 } });
  const sns = {
    topicArns: new Set([SANDBOX_SNS_TOPIC_ARN]),
    certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
  };
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: null,
    mailgunSigningKey: null,
    sns: { ...sns, trustTestCertificateOrigin: sandbox.url },
    maxAgeMs: MAX_AGE_MS,
    log: () => undefined,
  });
  untrusting = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: null,
    mailgunSigningKey: null,
    sns,
    maxAgeMs: MAX_AGE_MS,
    log: () => undefined,
  });
  sandbox.configureWebhooks({ url: receiver.url });
});

afterAll(async () => {
  await receiver?.close();
  await untrusting?.close();
  await sandbox?.close();
  await database?.close();
});

async function post(message: Record<string, unknown>, to: WebhookServer = receiver, body?: string) {
  const response = await request(`${to.url}/webhooks/ses`, {
    method: 'POST',
    headers: sandbox.sns.headers(message),
    body: body ?? JSON.stringify(message),
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

/** A message as the SES emulation would have held it, for events made by hand. */
function heldMessage(orderId: string, overrides: Partial<ReceivedMessage> = {}): ReceivedMessage {
  return {
    id: `0100018c-hand-${orderId}-000000`,
    orderId,
    to: 'customer@example.com',
    from: 'shop@example.com',
    sendKey: orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 0),
    receivedAt: new Date().toISOString(),
    ...overrides,
  } as ReceivedMessage;
}

function sendNotification(orderId: string, options: Parameters<MailSandbox['sns']['notification']>[1] = {}) {
  return sandbox.sns.notification(sandbox.sns.sesEvent(heldMessage(orderId), 'Send'), options);
}

/** Posts `message` and expects it refused with `status`, both tables unchanged. */
async function expectRefused(
  message: Record<string, unknown>,
  status: number,
  problem: RegExp,
  to = receiver,
) {
  const before = await tableCounts();
  const answer = await post(message, to);
  expect(answer.status).toBe(status);
  expect(String(answer.body.error)).toMatch(problem);
  expect(await tableCounts()).toEqual(before);
}

describe('SES events through SNS', () => {
  it('a send through the SES emulation: SNS posts Send and Delivery, stored as accepted and delivered with the send key', async () => {
    const orderId = String((nextOrder += 10));
    const client = testProviderMailClient('ses', sandbox.url);
    const sendKey = orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 0);
    const result = await client.send({
      orderId,
      to: 'customer@example.com',
      from: 'shop@example.com',
      replyTo: null,
      subject: 'ご注文ありがとうございます',
      text: 'ok',
      html: '<p>ok</p>',
      sendKey,
    });
    await client.close();
    expect(result.outcome).toBe('accepted');
    await sandbox.webhooksSettled();
    const events = await waitFor('both SES events stored', async () => {
      const rows = await listProviderEvents(database.db, orderId);
      return rows.length === 2 ? rows : undefined;
    });
    expect(events.map((event) => [event.provider, event.eventType, event.sendKey])).toEqual([
      ['ses', 'accepted', sendKey],
      ['ses', 'delivered', sendKey],
    ]);
    expect(events[0]!.providerMessageId).toBe(
      result.outcome === 'accepted' ? result.providerMessageId : null,
    );
    // Fetched once, then cached.
    expect(sandbox.sns.certificateFetchCount).toBe(1);
  });

  it('SignatureVersion 1 (RSA-SHA1) is verified as well as 2', async () => {
    const orderId = String((nextOrder += 10));
    const answer = await post(sendNotification(orderId, { signatureVersion: '1' }));
    expect(answer.status).toBe(200);
    expect(answer.body.stored).toBe(1);
    expect((await listProviderEvents(database.db, orderId)).map((event) => event.eventType)).toEqual([
      'accepted',
    ]);
  });

  it('forged: a Message changed after signing is refused, nothing written', async () => {
    const orderId = String((nextOrder += 10));
    const genuine = sendNotification(orderId);
    const other = sandbox.sns.sesEvent(heldMessage(String(nextOrder + 1)), 'Send');
    await expectRefused({ ...genuine, Message: JSON.stringify(other) }, 401, /does not verify/);
    await expectRefused(
      { ...genuine, Signature: Buffer.alloc(256, 7).toString('base64') },
      401,
      /does not verify/,
    );
    expect(await listProviderEvents(database.db, orderId)).toEqual([]);
  });

  it('a certificate from a host not allowed is refused before it is fetched, nothing written', async () => {
    const orderId = String((nextOrder += 10));
    const fetchesBefore = sandbox.sns.certificateFetchCount;
    for (const signingCertUrl of [
      'https://sns.us-east-1.amazonaws.com.evil.example/SimpleNotificationService.pem',
      'https://evil.example/sns.us-east-1.amazonaws.com/SimpleNotificationService.pem',
      'http://sns.us-east-1.amazonaws.com/SimpleNotificationService.pem',
      'https://sns.us-east-1.amazonaws.com/SimpleNotificationService.txt',
      // Loopback, but not the one origin the test trusts.
      'http://127.0.0.1:9/SimpleNotificationService.pem',
    ]) {
      await expectRefused(sendNotification(orderId, { signingCertUrl }), 401, /certificate URL/);
    }
    expect(sandbox.sns.certificateFetchCount).toBe(fetchesBefore);
  });

  it('a receiver not told to trust the test origin refuses a genuine message signed with the test certificate', async () => {
    const orderId = String((nextOrder += 10));
    await expectRefused(sendNotification(orderId), 401, /not https|not an SNS host/, untrusting);
  });

  it('stale: a genuine signature over a Timestamp older than SNS retries (SNS_MAX_RETRY_S) is refused, nothing written', async () => {
    const orderId = String((nextOrder += 10));
    await expectRefused(
      sendNotification(orderId, { timestamp: new Date(Date.now() - MAX_RETRY_MS - MAX_AGE_MS - 60_000) }),
      401,
      /stale/,
    );
  });

  it("a genuine retry SNS makes 50 minutes after publishing is stored once; its replay stays a replay after every provider's token clean-up", async () => {
    const orderId = String((nextOrder += 10));
    // SNS keeps the first Timestamp on every retry: after a receiver outage, the retry is that old.
    const published = new Date(Date.now() - 50 * 60_000);
    const late = sandbox.sns.notification(
      sandbox.sns.sesEvent(heldMessage(orderId, { receivedAt: published.toISOString() }), 'Send', published),
      { timestamp: published },
    );
    expect(await post(late)).toMatchObject({ status: 200, body: { stored: 1 } });
    // Other deliveries clean up old tokens: a fresh SES one, and a Mailgun one (its tokens are always written).
    expect((await post(sendNotification(String((nextOrder += 10))))).status).toBe(200);
    await storeDelivery(
      database.db,
      'mailgun',
      { token: `clean-up-${orderId}`, signedAt: new Date(), events: [], skipped: {} },
      new Date(Date.now() - MAX_AGE_MS - 60_000),
    );
    await expectRefused(late, 409, /replay/);
    expect(await listProviderEvents(database.db, orderId)).toHaveLength(1);
  });

  it('with requireSignatureVersion2, SignatureVersion 1 is refused over HTTP and 2 is stored', async () => {
    const strict = await startWebhookServer({
      db: database.db,
      host: '127.0.0.1',
      port: 0,
      sendgridPublicKey: null,
      mailgunSigningKey: null,
      sns: {
        topicArns: new Set([SANDBOX_SNS_TOPIC_ARN]),
        certHostPattern: new RegExp(DEFAULT_SNS_CERT_HOST_PATTERN),
        trustTestCertificateOrigin: sandbox.url,
        requireSignatureVersion2: true,
      },
      maxAgeMs: MAX_AGE_MS,
      log: () => undefined,
    });
    try {
      const orderId = String((nextOrder += 10));
      await expectRefused(
        sendNotification(orderId, { signatureVersion: '1' }),
        401,
        /SignatureVersion/,
        strict,
      );
      expect(await post(sendNotification(orderId, { signatureVersion: '2' }), strict)).toMatchObject({
        status: 200,
        body: { stored: 1 },
      });
    } finally {
      await strict.close();
    }
  });

  it('replayed: the same MessageId a second time is refused, the first stored once', async () => {
    const orderId = String((nextOrder += 10));
    const message = sendNotification(orderId);
    expect((await post(message)).status).toBe(200);
    await expectRefused(message, 409, /replay/);
    expect(await listProviderEvents(database.db, orderId)).toHaveLength(1);
  });

  it('a topic not on the allow-list is refused, signed or not, nothing written', async () => {
    const orderId = String((nextOrder += 10));
    await expectRefused(
      sendNotification(orderId, { topicArn: 'arn:aws:sns:us-east-1:000000000000:someone-elses-topic' }),
      403,
      /SES_SNS_TOPIC_ARNS/,
    );
  });

  it('SubscriptionConfirmation: confirmed by a GET of its SubscribeURL, nothing written', async () => {
    const before = await tableCounts();
    const confirmedBefore = sandbox.sns.confirmed().length;
    const message = sandbox.sns.subscriptionConfirmation();
    const answer = await post(message);
    expect(answer).toEqual({ status: 200, body: { confirmed: true } });
    expect(sandbox.sns.confirmed()).toEqual([
      ...sandbox.sns.confirmed().slice(0, confirmedBefore),
      message.Token,
    ]);
    expect(await tableCounts()).toEqual(before);
  });

  it('a SubscriptionConfirmation whose SubscribeURL is elsewhere is refused and never fetched; a forged one too', async () => {
    const confirmedBefore = sandbox.sns.confirmed().length;
    await expectRefused(
      sandbox.sns.subscriptionConfirmation({
        subscribeUrl: 'https://attacker.example/?Action=ConfirmSubscription',
      }),
      401,
      /subscribe URL/,
    );
    const genuine = sandbox.sns.subscriptionConfirmation();
    await expectRefused(
      { ...genuine, SubscribeURL: `${sandbox.url}/sns/confirm?Token=forged` },
      401,
      /does not verify/,
    );
    expect(sandbox.sns.confirmed()).toHaveLength(confirmedBefore);
  });

  it("another system's mail on the topic (no send key of ours) is counted and skipped, not stored", async () => {
    const orderId = String((nextOrder += 10));
    const stranger = sandbox.sns.notification(
      sandbox.sns.sesEvent(heldMessage(orderId, { sendKey: 'invoice/INV-2026-0042' }), 'Send'),
    );
    const before = await tableCounts();
    const answer = await post(stranger);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ stored: 0, skipped: 1 });
    expect((await tableCounts()).events).toBe(before.events);
  });
});

describe('the receiver configuration', () => {
  const base = { WEBHOOK_DATABASE_URL: 'postgres://webhooks@db/orders' };

  it('takes SES_SNS_TOPIC_ARNS with the AWS certificate hosts by default', () => {
    const config = loadWebhookConfig({ ...base, SES_SNS_TOPIC_ARNS: SANDBOX_SNS_TOPIC_ARN });
    expect([...config.sns!.topicArns]).toEqual([SANDBOX_SNS_TOPIC_ARN]);
    expect(config.sns!.certHostPattern.test('sns.eu-west-1.amazonaws.com')).toBe(true);
    expect(config.sns!.trustTestCertificateOrigin).toBeUndefined();
  });

  it('SNS_MAX_RETRY_S (default 3600) and SNS_REQUIRE_SIGNATURE_V2 (default false), each checked', () => {
    const topics = { ...base, SES_SNS_TOPIC_ARNS: SANDBOX_SNS_TOPIC_ARN };
    expect(loadWebhookConfig(topics).sns).toMatchObject({
      maxRetryMs: 3_600_000,
      requireSignatureVersion2: false,
    });
    expect(
      loadWebhookConfig({ ...topics, SNS_MAX_RETRY_S: '1800', SNS_REQUIRE_SIGNATURE_V2: 'true' }).sns,
    ).toMatchObject({ maxRetryMs: 1_800_000, requireSignatureVersion2: true });
    const both = () =>
      loadWebhookConfig({ ...topics, SNS_MAX_RETRY_S: '1h', SNS_REQUIRE_SIGNATURE_V2: 'yes please' });
    expect(both).toThrow(/SNS_MAX_RETRY_S must be/);
    expect(both).toThrow(/SNS_REQUIRE_SIGNATURE_V2 must be/);
    expect(() => loadWebhookConfig({ ...base, SNS_MAX_RETRY_S: '600' })).toThrow(
      /SNS_MAX_RETRY_S is set without SES_SNS_TOPIC_ARNS/,
    );
  });

  it('refuses any attempt to trust a test origin from the environment, and a certificate pattern wider than AWS', () => {
    expect(() =>
      loadWebhookConfig({
        ...base,
        SES_SNS_TOPIC_ARNS: SANDBOX_SNS_TOPIC_ARN,
        SNS_TRUST_TEST_CERTIFICATE_ORIGIN: 'http://127.0.0.1:4010',
      }),
    ).toThrow(/SNS_TRUST_TEST_CERTIFICATE_ORIGIN is not a setting/);
    expect(() =>
      loadWebhookConfig({ ...base, SES_SNS_TOPIC_ARNS: SANDBOX_SNS_TOPIC_ARN, SNS_CERT_HOST_PATTERN: '.*' }),
    ).toThrow(/SNS_CERT_HOST_PATTERN must be anchored/);
    expect(() =>
      loadWebhookConfig({
        ...base,
        SES_SNS_TOPIC_ARNS: SANDBOX_SNS_TOPIC_ARN,
        SNS_CERT_HOST_PATTERN: '^sns\\..*$',
      }),
    ).toThrow(/matches sns\.example\.com/);
  });
});
