// The sandbox's provider emulations, driven by a plain undici client (not the adapters they exist to test):
// auth and error shapes per provider, and Resend's idempotency store with its window.

import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox, type MailSandboxOptions } from '../src/mailSandbox';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandbox(options: MailSandboxOptions = {}): Promise<MailSandbox> {
  const started = await startMailSandbox({ apiKey: 'key-1', ...options });
  cleanups.push(() => started.close());
  return started;
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

async function call(
  url: string,
  path: string,
  headers: Record<string, string>,
  body: string,
  method: 'POST' | 'GET' = 'POST',
): Promise<Answer> {
  const client = new Client(url);
  try {
    const response = await client.request({ method, path, headers, body: method === 'GET' ? null : body });
    const text = await response.body.text();
    return {
      status: response.statusCode,
      headers: response.headers,
      body: text === '' ? null : (JSON.parse(text) as unknown),
    };
  } finally {
    await client.close();
  }
}

function resendBody(orderId: string, overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({
    from: 'shop@example.com',
    to: ['customer@example.com'],
    subject: 'Thanks',
    text: 'Confirmed.',
    html: '<p>Confirmed.</p>',
    tags: [{ name: 'order_id', value: orderId }],
    ...overrides,
  });
}

const resendHeaders = (key: string | null, token = 'key-1'): Record<string, string> => ({
  authorization: `Bearer ${token}`,
  'content-type': 'application/json',
  ...(key === null ? {} : { 'idempotency-key': key }),
});

describe('auth and error shapes', () => {
  it('Resend: a missing key is 401 missing_api_key, a wrong one 403 invalid_api_key', async () => {
    const api = await sandbox();
    const missing = await call(api.url, '/emails', { 'content-type': 'application/json' }, resendBody('1'));
    expect(missing).toMatchObject({ status: 401, body: { statusCode: 401, name: 'missing_api_key' } });
    const wrong = await call(api.url, '/emails', resendHeaders(null, 'nope'), resendBody('1'));
    expect(wrong).toMatchObject({ status: 403, body: { name: 'invalid_api_key' } });
    expect(api.messages()).toEqual([]);
  });

  it('Postmark: a wrong server token is 401 with ErrorCode 10', async () => {
    const api = await sandbox();
    const answer = await call(
      api.url,
      '/email',
      { 'x-postmark-server-token': 'nope', 'content-type': 'application/json' },
      JSON.stringify({ From: 'a@example.com', To: 'b@example.com', Subject: 's', TextBody: 't' }),
    );
    expect(answer).toMatchObject({ status: 401, body: { ErrorCode: 10 } });
  });

  it('SendGrid: accepted is 202 with an empty body and X-Message-Id', async () => {
    const api = await sandbox();
    const answer = await call(
      api.url,
      '/v3/mail/send',
      { authorization: 'Bearer key-1', 'content-type': 'application/json' },
      JSON.stringify({
        personalizations: [{ to: [{ email: 'b@example.com' }] }],
        from: { email: 'a@example.com' },
        subject: 's',
        content: [{ type: 'text/plain', value: 't' }],
        custom_args: { order_id: '5' },
      }),
    );
    expect(answer).toMatchObject({ status: 202, body: null });
    expect(answer.headers['x-message-id']).toBe(api.messages()[0]?.id);
  });

  it('Mailgun: Basic api:key and a form body; a JSON body is refused', async () => {
    const api = await sandbox();
    const authorization = `Basic ${Buffer.from('api:key-1').toString('base64')}`;
    const form = new URLSearchParams({
      from: 'a@example.com',
      to: 'b@example.com',
      subject: 's',
      text: 't',
      'v:order_id': '6',
    });
    const ok = await call(
      api.url,
      '/v3/mg.example.com/messages',
      { authorization, 'content-type': 'application/x-www-form-urlencoded' },
      form.toString(),
    );
    expect(ok).toMatchObject({ status: 200, body: { message: 'Queued. Thank you.' } });
    expect((ok.body as { id: string }).id).toMatch(/@mg\.example\.com>$/);
    const json = await call(
      api.url,
      '/v3/mg.example.com/messages',
      { authorization, 'content-type': 'application/json' },
      '{}',
    );
    expect(json.status).toBe(400);
  });

  it('a key rotation: the old and the new key both work until the old one is revoked, then it is 401', async () => {
    const api = await sandbox();
    const send = (key: string, orderId: string) =>
      call(
        api.url,
        '/v3/mg.example.com/messages',
        {
          authorization: `Basic ${Buffer.from(`api:${key}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        new URLSearchParams({
          from: 'a@example.com',
          to: 'b@example.com',
          subject: 's',
          text: 't',
          'v:order_id': orderId,
        }).toString(),
      );
    expect((await send('key-2', '1')).status).toBe(401);
    api.setApiKeys(['key-1', 'key-2']);
    expect((await send('key-1', '2')).status).toBe(200);
    expect((await send('key-2', '3')).status).toBe(200);
    api.setApiKeys(['key-2']);
    expect((await send('key-1', '4')).status).toBe(401);
    expect((await send('key-2', '5')).status).toBe(200);
    expect(api.messages().map((message) => message.orderId)).toEqual(['2', '3', '5']);
  });

  it('a provider path with another method is 405, an unknown one 404', async () => {
    const api = await sandbox();
    expect((await call(api.url, '/emails', {}, '', 'GET')).status).toBe(405);
    expect((await call(api.url, '/v3/mail/send/extra', {}, '{}')).status).toBe(404);
    expect(api.requests().map((request) => [request.provider, request.status])).toEqual([
      ['resend', 405],
      [null, 404],
    ]);
  });
});

describe('Resend idempotency store', () => {
  it('the same key and body within the window: the first answer again, no new message, no fault drawn', async () => {
    const api = await sandbox();
    const first = await call(api.url, '/emails', resendHeaders('k/1'), resendBody('10'));
    api.queueFault('10', { kind: 'status', status: 500 });
    const again = await call(api.url, '/emails', resendHeaders('k/1'), resendBody('10'));
    expect(again).toMatchObject({ status: 200, body: first.body });
    expect(api.messagesFor('10')).toHaveLength(1);
    expect(api.requests().map((request) => request.replayed)).toEqual([false, true]);
    // The queued fault is still there for the next request that would send.
    const other = await call(api.url, '/emails', resendHeaders('k/2'), resendBody('10'));
    expect(other.status).toBe(500);
  });

  it('the same key with another body is 409 invalid_idempotent_request', async () => {
    const api = await sandbox();
    await call(api.url, '/emails', resendHeaders('k/3'), resendBody('11'));
    const changed = await call(api.url, '/emails', resendHeaders('k/3'), resendBody('11', { subject: 'x' }));
    expect(changed).toMatchObject({ status: 409, body: { name: 'invalid_idempotent_request' } });
    expect(api.messagesFor('11')).toHaveLength(1);
  });

  it('a key outside 1-256 characters is 400 invalid_idempotency_key', async () => {
    const api = await sandbox();
    const answer = await call(api.url, '/emails', resendHeaders('k'.repeat(257)), resendBody('12'));
    expect(answer).toMatchObject({ status: 400, body: { name: 'invalid_idempotency_key' } });
    expect(api.messages()).toEqual([]);
  });

  it('a request that created nothing leaves its key free', async () => {
    const api = await sandbox();
    api.queueFault('13', { kind: 'status', status: 503 });
    expect((await call(api.url, '/emails', resendHeaders('k/4'), resendBody('13'))).status).toBe(503);
    expect((await call(api.url, '/emails', resendHeaders('k/4'), resendBody('13'))).status).toBe(200);
    expect(api.messagesFor('13')).toHaveLength(1);
  });

  it('"500 after processing" is remembered: the retry gets the success the provider had stored', async () => {
    const api = await sandbox();
    api.queueFault('14', { kind: 'status', status: 500, record: true });
    expect((await call(api.url, '/emails', resendHeaders('k/5'), resendBody('14'))).status).toBe(500);
    const retry = await call(api.url, '/emails', resendHeaders('k/5'), resendBody('14'));
    expect(retry).toMatchObject({ status: 200, body: { id: api.messagesFor('14')[0]?.id } });
    expect(api.messagesFor('14')).toHaveLength(1);
  });

  it('after the window the key is new again: a second message', async () => {
    let now = Date.parse('2025-03-01T00:00:00Z');
    const api = await sandbox({ now: () => new Date(now) });
    await call(api.url, '/emails', resendHeaders('k/6'), resendBody('15'));
    now += 24 * 60 * 60 * 1000 - 1;
    await call(api.url, '/emails', resendHeaders('k/6'), resendBody('15'));
    expect(api.messagesFor('15')).toHaveLength(1);
    now += 1;
    await call(api.url, '/emails', resendHeaders('k/6'), resendBody('15'));
    expect(api.messagesFor('15')).toHaveLength(2);
  });

  it('without a key nothing is deduplicated', async () => {
    const api = await sandbox();
    await call(api.url, '/emails', resendHeaders(null), resendBody('16'));
    await call(api.url, '/emails', resendHeaders(null), resendBody('16'));
    expect(api.messagesFor('16')).toHaveLength(2);
  });
});
