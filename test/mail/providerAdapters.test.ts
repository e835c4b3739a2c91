// Each provider adapter over real HTTP: the exact request it sends (headers and body, captured by a loopback
// server), and against the sandbox's emulation of the provider the message id it parses, every documented
// status class, and an auth failure reported as rejected with a message that says what to fix.

import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_DEPLOYMENT_ID } from '../../src/evidence/messageIdentity';
import { orderConfirmationSendKey } from '../../src/mail/sendKey';
import type { MailProviderName } from '../../src/mail/providers/mailProvider';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import type { Fault } from '../../packages/sandbox/src/faults';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import type { MailOutcome } from '../../src/shared/mailOutcome';
import { TEST_MAILGUN_DOMAIN, testProviderMailClient } from '../support/testKit';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandbox(): Promise<MailSandbox> {
  const started = await startMailSandbox({ apiKey: 'provider-key-1' });
  cleanups.push(() => started.close());
  return started;
}

function client(provider: MailProviderName, baseUrl: string, apiKey = 'provider-key-1'): MailTransport {
  const created = testProviderMailClient(provider, baseUrl, apiKey);
  cleanups.push(() => created.close());
  return created;
}

function mail(orderId: string, overrides: Partial<OutgoingMail> = {}): OutgoingMail {
  return {
    orderId,
    to: 'customer@example.com',
    from: 'Shop <shop@example.com>',
    replyTo: 'support@example.com',
    subject: 'ご注文ありがとうございます',
    text: `ご注文番号: ${orderId}\n`,
    html: `<p>ご注文番号: ${orderId}</p>`,
    sendKey: orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, orderId, 0),
    ...overrides,
  };
}

interface Captured {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback server that records the one request it gets and answers `status` with `body`. */
async function captureServer(
  status: number,
  body: string,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<{ url: string; captured: () => Captured }> {
  let seen: Captured | null = null;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      res.writeHead(status, headers).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    captured: () => {
      if (seen === null) throw new Error('the capture server saw no request');
      return seen;
    },
  };
}

describe('request shape', () => {
  it('generic: bearer key, JSON with both parts and the order id as metadata', async () => {
    const server = await captureServer(202, '{"id":"g_1"}');
    expect(await client('generic', server.url, 'k-generic').send(mail('501'))).toEqual({
      outcome: 'accepted',
      httpStatus: 202,
      providerMessageId: 'g_1',
    });
    const seen = server.captured();
    expect(seen).toMatchObject({ method: 'POST', url: '/v1/messages' });
    expect(seen.headers).toMatchObject({
      authorization: 'Bearer k-generic',
      'content-type': 'application/json',
    });
    expect(JSON.parse(seen.body)).toEqual({
      from: 'Shop <shop@example.com>',
      to: 'customer@example.com',
      reply_to: 'support@example.com',
      subject: 'ご注文ありがとうございます',
      text: 'ご注文番号: 501\n',
      html: '<p>ご注文番号: 501</p>',
      metadata: { order_id: '501', send_key: 'order-confirmation/default/501/0' },
    });
  });

  it('SendGrid: POST /v3/mail/send, bearer key, personalizations, text/plain before text/html; id from X-Message-Id', async () => {
    const server = await captureServer(202, '', { 'x-message-id': 'SGid-42.filter' });
    expect(await client('sendgrid', server.url, 'SG.key-1').send(mail('502'))).toEqual({
      outcome: 'accepted',
      httpStatus: 202,
      providerMessageId: 'SGid-42.filter',
    });
    const seen = server.captured();
    expect(seen).toMatchObject({ method: 'POST', url: '/v3/mail/send' });
    expect(seen.headers).toMatchObject({
      authorization: 'Bearer SG.key-1',
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(JSON.parse(seen.body)).toEqual({
      personalizations: [{ to: [{ email: 'customer@example.com' }] }],
      from: { email: 'shop@example.com', name: 'Shop' },
      reply_to: { email: 'support@example.com' },
      subject: 'ご注文ありがとうございます',
      content: [
        { type: 'text/plain', value: 'ご注文番号: 502\n' },
        { type: 'text/html', value: '<p>ご注文番号: 502</p>' },
      ],
      custom_args: { order_id: '502', send_key: 'order-confirmation/default/502/0' },
    });
  });

  it('Postmark: POST /email, X-Postmark-Server-Token, PascalCase fields, stream and metadata; id from MessageID', async () => {
    const server = await captureServer(
      200,
      '{"To":"customer@example.com","SubmittedAt":"2025-01-01T00:00:00Z","MessageID":"pm-uuid-1","ErrorCode":0,"Message":"OK"}',
    );
    expect(await client('postmark', server.url, 'pm-token-1').send(mail('503'))).toEqual({
      outcome: 'accepted',
      httpStatus: 200,
      providerMessageId: 'pm-uuid-1',
    });
    const seen = server.captured();
    expect(seen).toMatchObject({ method: 'POST', url: '/email' });
    expect(seen.headers).toMatchObject({
      'x-postmark-server-token': 'pm-token-1',
      'content-type': 'application/json',
      accept: 'application/json',
    });
    expect(seen.headers.authorization).toBeUndefined();
    expect(JSON.parse(seen.body)).toEqual({
      From: 'Shop <shop@example.com>',
      To: 'customer@example.com',
      ReplyTo: 'support@example.com',
      Subject: 'ご注文ありがとうございます',
      TextBody: 'ご注文番号: 503\n',
      HtmlBody: '<p>ご注文番号: 503</p>',
      MessageStream: 'outbound',
      Metadata: { order_id: '503', send_key: 'order-confirmation/default/503/0' },
    });
  });

  it('Resend: POST /emails, bearer key, the claim’s Idempotency-Key, the order id as a tag; id from the body', async () => {
    const server = await captureServer(200, '{"id":"re-uuid-1"}');
    expect(await client('resend', server.url, 're_key_1').send(mail('504'))).toEqual({
      outcome: 'accepted',
      httpStatus: 200,
      providerMessageId: 're-uuid-1',
    });
    const seen = server.captured();
    expect(seen).toMatchObject({ method: 'POST', url: '/emails' });
    expect(seen.headers).toMatchObject({
      authorization: 'Bearer re_key_1',
      'content-type': 'application/json',
      'idempotency-key': 'order-confirmation/default/504/0',
    });
    expect(JSON.parse(seen.body)).toEqual({
      from: 'Shop <shop@example.com>',
      to: ['customer@example.com'],
      reply_to: 'support@example.com',
      subject: 'ご注文ありがとうございます',
      text: 'ご注文番号: 504\n',
      html: '<p>ご注文番号: 504</p>',
      tags: [{ name: 'order_id', value: '504' }],
    });
  });

  it('Mailgun: POST /v3/{domain}/messages, Basic api:key, form-encoded with h:Reply-To, our own Message-Id and the order and send as user variables', async () => {
    const server = await captureServer(
      200,
      '{"id":"<20250101.1@mg.example.com>","message":"Queued. Thank you."}',
    );
    expect(await client('mailgun', server.url, 'mg-key-1').send(mail('505'))).toEqual({
      outcome: 'accepted',
      httpStatus: 200,
      providerMessageId: '<20250101.1@mg.example.com>',
    });
    const seen = server.captured();
    expect(seen).toMatchObject({ method: 'POST', url: `/v3/${TEST_MAILGUN_DOMAIN}/messages` });
    expect(seen.headers).toMatchObject({
      authorization: `Basic ${Buffer.from('api:mg-key-1').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(Object.fromEntries(new URLSearchParams(seen.body))).toEqual({
      from: 'Shop <shop@example.com>',
      to: 'customer@example.com',
      subject: 'ご注文ありがとうございます',
      text: 'ご注文番号: 505\n',
      html: '<p>ご注文番号: 505</p>',
      'h:Reply-To': 'support@example.com',
      // Derived from the send key: the same on every attempt, so the Events API can be asked about it.
      'h:Message-Id': `<order-confirmation/default/505/0@${TEST_MAILGUN_DOMAIN}>`,
      'v:order_id': '505',
      'v:send_key': 'order-confirmation/default/505/0',
    });
  });

  it('a base URL with a path prefix is kept in front of the provider path (regions, proxies)', async () => {
    const server = await captureServer(200, '{"id":"x"}');
    await client('resend', `${server.url}/proxy/resend/`).send(mail('506'));
    expect(server.captured().url).toBe('/proxy/resend/emails');
  });

  it('no reply-to: the field is left out rather than sent empty', async () => {
    const server = await captureServer(200, '{"id":"x"}');
    await client('postmark', server.url).send(mail('507', { replyTo: null }));
    expect(JSON.parse(server.captured().body)).not.toHaveProperty('ReplyTo');
  });

  it('an id that is not a short token is not kept (it would go into history and the log)', async () => {
    const server = await captureServer(200, JSON.stringify({ id: 'x'.repeat(300) }));
    expect(await client('resend', server.url).send(mail('508'))).toMatchObject({
      outcome: 'accepted',
      providerMessageId: null,
    });
  });
});

const ALL: MailProviderName[] = ['generic', 'sendgrid', 'postmark', 'resend', 'mailgun'];

describe.each(ALL)('%s against the sandbox', (provider) => {
  it('accepted: the parsed id is the one the sandbox gave the message it holds', async () => {
    const api = await sandbox();
    const result = await client(provider, api.url).send(mail('601'));
    const [message] = api.messagesFor('601');
    expect(result).toMatchObject({ outcome: 'accepted', providerMessageId: message?.id });
    expect(message?.id).toEqual(expect.any(String));
    expect(message).toMatchObject({
      provider,
      to: 'customer@example.com',
      replyTo: 'support@example.com',
      subject: 'ご注文ありがとうございます',
      text: 'ご注文番号: 601\n',
      html: '<p>ご注文番号: 601</p>',
    });
  });

  it('a wrong API key is rejected with a message that names the fix, and the keys appear nowhere in it', async () => {
    const api = await sandbox();
    const result = await client(provider, api.url, 'wrong-key-7f3a').send(mail('602'));
    expect(result.outcome).toBe('rejected');
    if (result.outcome !== 'rejected') return;
    expect([401, 403]).toContain(result.httpStatus);
    expect(result.reason).toMatch(/authentication failed|forbidden/);
    expect(result.reason).toContain('MAIL_API_KEY');
    // The sandbox echoes the key it was sent in its error body; none of it may come back.
    expect(JSON.stringify(result)).not.toContain('wrong-key-7f3a');
    expect(JSON.stringify(result)).not.toContain('provider-key-1');
    expect(api.messages()).toEqual([]);
  });

  it('an address the provider refuses is rejected, and the address is not copied from its error body', async () => {
    const api = await sandbox();
    const result = await client(provider, api.url).send(mail('603', { to: 'not-an-address@nowhere' }));
    expect(result.outcome).toBe('rejected');
    expect(JSON.stringify(result)).not.toContain('not-an-address');
    expect(api.messages()).toEqual([]);
  });
});

/** Documented status classes per provider (the adapters' comments cite the documentation). */
const STATUS_ROWS: Record<Exclude<MailProviderName, 'generic'>, Array<[number, MailOutcome, string?]>> = {
  sendgrid: [
    [400, 'rejected'],
    [401, 'rejected'],
    [403, 'rejected'],
    [413, 'rejected'],
    [429, 'not_sent'],
    [500, 'unknown'],
    // SendGrid: a 5xx is an error "when SendGrid attempted to process" the request.
    [503, 'unknown'],
  ],
  postmark: [
    [401, 'rejected'],
    [413, 'rejected'],
    [422, 'rejected'],
    [429, 'not_sent'],
    [500, 'unknown'],
    // A 503 may come from a load balancer after forwarding (issue 22, finding 3): the lookup settles it.
    [503, 'unknown'],
    // ErrorCode 100 "Maintenance" is Postmark's own word that nothing was processed.
    [503, 'not_sent', '100'],
  ],
  resend: [
    [400, 'rejected'],
    [401, 'rejected'],
    [403, 'rejected'],
    [404, 'rejected'],
    [422, 'rejected'],
    [429, 'not_sent', 'rate_limit_exceeded'],
    [429, 'not_sent', 'daily_quota_exceeded'],
    [409, 'unknown', 'concurrent_idempotent_requests'],
    // Proof that an earlier request with the key was processed: evidence of a send, not of "not accepted".
    [409, 'unknown', 'invalid_idempotent_request'],
    [500, 'unknown'],
    // May follow processing behind a load balancer, as anywhere: unknown, so the key retries it at Resend. As
    // not_sent it let failover move the order to a provider without the key (a second mail).
    [503, 'unknown'],
  ],
  mailgun: [
    [400, 'rejected'],
    [401, 'rejected'],
    [403, 'rejected'],
    [413, 'rejected'],
    // Mailgun: a 404 "can be temporal" while a new domain propagates.
    [404, 'not_sent'],
    [429, 'not_sent'],
    [500, 'unknown'],
    [503, 'unknown'],
  ],
  ses: [
    [400, 'rejected', 'MessageRejected'],
    [400, 'rejected', 'MailFromDomainNotVerified'],
    [400, 'rejected', 'AccountSuspended'],
    [400, 'rejected', 'SendingPaused'],
    [429, 'not_sent', 'TooManyRequests'],
    // AWS's Throttling is retryable whatever status carries it.
    [400, 'not_sent', 'Throttling'],
    [500, 'unknown'],
    // No lookup, and nothing says a 503 came before processing: the Send event or the policy decides.
    [503, 'unknown'],
  ],
};

describe.each(Object.entries(STATUS_ROWS))('%s status classes', (provider, rows) => {
  it.each(rows)('HTTP %i → %s (provider error %s)', async (status, expected, providerError) => {
    const api = await sandbox();
    const fault: Fault = { kind: 'status', status, retryAfterSeconds: 4 };
    if (providerError !== undefined) fault.providerError = providerError;
    api.queueFault('701', fault);
    const result = await client(provider as MailProviderName, api.url).send(mail('701'));
    expect(result).toMatchObject({ outcome: expected, httpStatus: status });
    if (result.outcome !== 'accepted') {
      expect(result.reason).toMatch(new RegExp(`^HTTP ${status} from \\w+`));
      if (providerError !== undefined) {
        const named = provider === 'postmark' ? `ErrorCode ${providerError}` : providerError;
        expect(result.errorCode).toBe(named);
        expect(result.reason).toContain(`(${named})`);
      }
    }
    if (result.outcome === 'not_sent') expect(result.retryAfterMs).toBe(4_000);
    expect(api.messages()).toEqual([]);
  });
});

describe('Resend idempotency, end to end with the sandbox', () => {
  it('every attempt of an order carries the same key; a repeat gets the first id back and no second message', async () => {
    const api = await sandbox();
    api.queueFault('801', { kind: 'accept-then-drop' });
    const transport = client('resend', api.url);
    const first = await transport.send(mail('801'));
    expect(first.outcome).toBe('unknown');
    const second = await transport.send(mail('801'));
    const [message] = api.messagesFor('801');
    expect(second).toMatchObject({ outcome: 'accepted', providerMessageId: message?.id });
    expect(api.messagesFor('801')).toHaveLength(1);
    expect(api.requests().map((request) => [request.idempotencyKey, request.replayed])).toEqual([
      [orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, '801', 0), false],
      [orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, '801', 0), true],
    ]);
  });

  it('the same key with a different body is 409 invalid_idempotent_request: evidence of an earlier send, unknown', async () => {
    const api = await sandbox();
    const transport = client('resend', api.url);
    expect((await transport.send(mail('802'))).outcome).toBe('accepted');
    const changed = await transport.send(mail('802', { subject: 'changed' }));
    // The key's earlier request was processed: whatever this one did, it is no proof of "not accepted".
    expect(changed).toMatchObject({
      outcome: 'unknown',
      httpStatus: 409,
      errorCode: 'invalid_idempotent_request',
    });
    expect(api.messagesFor('802')).toHaveLength(1);
  });

  it('a re-send (a new key) is a new request: a second message, not the first answer replayed', async () => {
    const api = await sandbox();
    const transport = client('resend', api.url);
    const first = await transport.send(mail('804'));
    const again = await transport.send(
      mail('804', { sendKey: orderConfirmationSendKey(DEFAULT_DEPLOYMENT_ID, '804', 1) }),
    );
    expect(again.outcome).toBe('accepted');
    expect(api.messagesFor('804')).toHaveLength(2);
    expect(again).not.toMatchObject({
      providerMessageId: (first as { providerMessageId: string }).providerMessageId,
    });
  });

  it('a mail without an idempotency key is refused before any request: a send without one could duplicate', async () => {
    const api = await sandbox();
    const transport = client('resend', api.url);
    await expect(transport.send(mail('805', { sendKey: undefined }))).rejects.toThrow(/no idempotency key/);
    expect(api.requests()).toHaveLength(0);
  });

  it('the same key while the first request is still processed is 409 concurrent_idempotent_requests: unknown', async () => {
    const api = await sandbox();
    api.queueFault('803', { kind: 'accept-then-hang' });
    const transport = client('resend', api.url);
    const first = await transport.send(mail('803')); // headers timeout: unknown
    expect(first.outcome).toBe('unknown');
    const second = await transport.send(mail('803'));
    expect(second).toMatchObject({
      outcome: 'unknown',
      httpStatus: 409,
      errorCode: 'concurrent_idempotent_requests',
    });
    // Once the provider has finished, the repeat is answered from the store: still one message.
    api.releaseHeld();
    expect(await transport.send(mail('803'))).toMatchObject({ outcome: 'accepted' });
    expect(api.messagesFor('803')).toHaveLength(1);
  });
});
