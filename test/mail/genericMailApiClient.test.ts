// The real client against the real sandbox over loopback: each provider behaviour, what the client
// concluded, and what the sandbox actually accepted.

import { afterEach, describe, expect, it } from 'vitest';
import {
  createGenericMailApiClient,
  MailClientConfigError,
  type GenericMailApiClientOptions,
} from '../../dev/devtools/genericMailApiClient';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';
import {
  startMailSandbox,
  type MailSandbox,
  type MailSandboxOptions,
} from '../../packages/sandbox/src/mailSandbox';
import { waitFor } from '../support/testKit';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandbox(options: MailSandboxOptions = {}): Promise<MailSandbox> {
  const started = await startMailSandbox(options);
  cleanups.push(() => started.close());
  return started;
}

function client(baseUrl: string, overrides: Partial<GenericMailApiClientOptions> = {}): MailTransport {
  const created = createGenericMailApiClient({
    baseUrl,
    apiKey: 'sandbox-key',
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    overallTimeoutMs: 10_000,
    connections: 2,
    ...overrides,
  });
  cleanups.push(() => created.close());
  return created;
}

function mail(orderId: string, overrides: Partial<OutgoingMail> = {}): OutgoingMail {
  return {
    orderId,
    to: 'customer@example.com',
    from: 'shop@example.com',
    replyTo: 'support@example.com',
    subject: 'ご注文ありがとうございます',
    text: `Order ${orderId} is confirmed.`,
    html: `<p>Order ${orderId} is confirmed.</p>`,
    ...overrides,
  };
}

describe('statuses', () => {
  it('accepted: parses the provider id, and the sandbox holds exactly that message', async () => {
    const api = await sandbox();
    const result = await client(api.url).send(mail('1001'));

    expect(result).toEqual({ outcome: 'accepted', httpStatus: 202, providerMessageId: 'sbx_1' });
    expect(api.messages()).toEqual([
      expect.objectContaining({
        id: 'sbx_1',
        orderId: '1001',
        to: 'customer@example.com',
        from: 'shop@example.com',
        replyTo: 'support@example.com',
        subject: 'ご注文ありがとうございます',
        text: 'Order 1001 is confirmed.',
        fault: null,
      }),
    ]);
  });

  it('accepted through a base URL with a path prefix is the same call', async () => {
    const api = await sandbox();
    // The sandbox serves /v1/messages only, so a prefix shows up as a 404: proof the prefix is honoured.
    const result = await client(`${api.url}/prefix/`).send(mail('1002'));
    expect(result).toMatchObject({ outcome: 'rejected', httpStatus: 404 });
    expect(api.requests()).toEqual([expect.objectContaining({ path: '/prefix/v1/messages', status: 404 })]);
  });

  it('400 for a missing field is rejected', async () => {
    const api = await sandbox();
    const result = await client(api.url).send(mail('1003', { subject: '' }));
    expect(result).toEqual({
      outcome: 'rejected',
      httpStatus: 400,
      errorCode: null,
      reason: 'HTTP 400 from the mail API: request rejected',
    });
    expect(api.messages()).toEqual([]);
  });

  it('401 for a wrong key is rejected, and the key appears nowhere in the result', async () => {
    const api = await sandbox();
    const secret = 'wrong-secret-key-4f1c9a';
    const result = await client(api.url, { apiKey: secret }).send(mail('1004'));
    expect(result).toMatchObject({ outcome: 'rejected', httpStatus: 401 });
    expect(JSON.stringify(result)).not.toContain(secret);
    expect(api.messages()).toEqual([]);
  });

  it('422 for an impossible address is rejected; the fixed address then goes through', async () => {
    const api = await sandbox();
    const transport = client(api.url);
    expect(await transport.send(mail('1005', { to: 'customer@@example' }))).toMatchObject({
      outcome: 'rejected',
      httpStatus: 422,
    });
    expect(await transport.send(mail('1005'))).toMatchObject({ outcome: 'accepted' });
    expect(api.messagesFor('1005')).toHaveLength(1);
  });

  it('429 with Retry-After is not_sent, with the delay in milliseconds', async () => {
    const api = await sandbox();
    api.queueFault('1006', { kind: 'status', status: 429, retryAfterSeconds: 7 });
    const result = await client(api.url).send(mail('1006'));
    expect(result).toEqual({
      outcome: 'not_sent',
      httpStatus: 429,
      errorCode: null,
      reason: 'HTTP 429 from the mail API: not accepted for now (transient)',
      retryAfterMs: 7000,
    });
    expect(api.messages()).toEqual([]);
  });

  it('503 is unknown: a load balancer may answer it after forwarding, and the lookup can settle it', async () => {
    const api = await sandbox();
    api.queueFault('1007', { kind: 'status', status: 503, record: true });
    const result = await client(api.url).send(mail('1007'));
    expect(result).toMatchObject({ outcome: 'unknown', httpStatus: 503 });
    expect(api.messages()).toHaveLength(1);
  });

  it('500 after processing is unknown: the sandbox did accept the message', async () => {
    const api = await sandbox();
    api.queueFault('1008', { kind: 'status', status: 500, record: true });
    const result = await client(api.url).send(mail('1008'));
    expect(result).toMatchObject({ outcome: 'unknown', httpStatus: 500 });
    expect(api.messagesFor('1008')).toHaveLength(1);
  });
});

describe('transport faults after the request started', () => {
  it('accept-then-drop is unknown, the sandbox recorded the message, and nothing was re-sent', async () => {
    const api = await sandbox();
    api.queueFault('2001', { kind: 'accept-then-drop' });
    const result = await client(api.url).send(mail('2001'));

    expect(result).toMatchObject({ outcome: 'unknown', httpStatus: null });
    if (result.outcome === 'unknown') expect(['UND_ERR_SOCKET', 'ECONNRESET']).toContain(result.errorCode);
    expect(api.messagesFor('2001')).toHaveLength(1);
    expect(api.requests()).toHaveLength(1);
  });

  it('drop-without-processing is unknown too: the client cannot tell it from accept-then-drop', async () => {
    const api = await sandbox();
    api.queueFault('2002', { kind: 'drop-without-processing' });
    const result = await client(api.url).send(mail('2002'));

    expect(result).toMatchObject({ outcome: 'unknown', httpStatus: null });
    expect(api.messages()).toEqual([]);
    expect(api.requests()).toEqual([expect.objectContaining({ orderId: '2002', status: 'dropped' })]);
  });

  it('a hang past headersTimeout is unknown, and the sandbox had recorded the message', async () => {
    const api = await sandbox();
    api.queueFault('2003', { kind: 'accept-then-hang' });
    const startedAt = Date.now();
    // undici's timers tick about once a second, so 1000 ms fires between 1 and 2 s.
    const result = await client(api.url, { headersTimeoutMs: 1000 }).send(mail('2003'));

    expect(result).toMatchObject({
      outcome: 'unknown',
      httpStatus: null,
      errorCode: 'UND_ERR_HEADERS_TIMEOUT',
    });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(900);
    expect(api.messagesFor('2003')).toHaveLength(1);
    expect(api.requests()).toEqual([expect.objectContaining({ status: 'hung' })]);
  });

  it('the overall deadline after start is unknown', async () => {
    const api = await sandbox();
    api.queueFault('2004', { kind: 'accept-then-hang' });
    const result = await client(api.url, { headersTimeoutMs: 30_000, overallTimeoutMs: 300 }).send(
      mail('2004'),
    );
    expect(result).toMatchObject({ outcome: 'unknown', errorCode: 'TimeoutError' });
    expect(api.messagesFor('2004')).toHaveLength(1);
  });
});

describe('failures before the request started', () => {
  it('connection refused while the sandbox refuses is not_sent, and nothing reached it', async () => {
    const api = await sandbox();
    // Long enough never to reopen during the test; close() cancels the reopening.
    await api.refuseConnectionsFor(60_000);
    const result = await client(api.url).send(mail('3001'));
    expect(result).toEqual({
      outcome: 'not_sent',
      httpStatus: null,
      errorCode: 'ECONNREFUSED',
      reason: 'connection refused before the request started (ECONNREFUSED)',
      retryAfterMs: null,
    });
    expect(api.requests()).toEqual([]);
  });

  it('a closed port is not_sent', async () => {
    const api = await startMailSandbox();
    const url = api.url;
    await api.close();
    const result = await client(url).send(mail('3002'));
    expect(result).toMatchObject({ outcome: 'not_sent', errorCode: 'ECONNREFUSED' });
  });

  it('a send that finds every connection busy until its fence deadline is not_sent, and never reaches the fence', async () => {
    const api = await sandbox();
    api.queueFault('3004', { kind: 'accept-then-hang' });
    // One connection: the second send waits for it (not in undici's queue, after the fence) while the first hangs.
    const transport = client(api.url, { connections: 1, headersTimeoutMs: 30_000, overallTimeoutMs: 1_000 });
    let fencesPassed = 0;
    const gate = (waitMs: number) => ({
      passFenceBy: performance.now() + waitMs,
      passFence: async () => void (fencesPassed += 1),
    });
    const first = transport.send(mail('3004'), gate(1_000));
    await waitFor('the first request to reach the sandbox', async () =>
      api.requests().length > 0 ? true : undefined,
    );
    const second = await transport.send(mail('3005'), gate(100));
    expect(second).toMatchObject({ outcome: 'not_sent', errorCode: 'CONNECTION_WAIT_TIMEOUT' });
    expect(fencesPassed).toBe(1);
    expect(await first).toMatchObject({ outcome: 'unknown', errorCode: 'TimeoutError' });
    expect(api.requests().map((r) => r.orderId)).toEqual(['3004']);
  });

  it('a fence that refuses: no request, the error passes through, and the connection serves the next send', async () => {
    const api = await sandbox();
    const transport = client(api.url, { connections: 1 });
    const refusal = new Error('claim lost');
    const refused = transport.send(mail('3006'), {
      passFenceBy: performance.now() + 1_000,
      passFence: () => Promise.reject(refusal),
    });
    await expect(refused).rejects.toBe(refusal);
    expect(api.requests()).toEqual([]);
    expect(await transport.send(mail('3007'))).toMatchObject({ outcome: 'accepted' });
  });

  it('a send after close() is not_sent: the closed pool refused it before anything was written', async () => {
    const api = await sandbox();
    const transport = client(api.url);
    await transport.close();
    const result = await transport.send(mail('3003'));
    expect(result).toMatchObject({ outcome: 'not_sent', httpStatus: null });
    if (result.outcome === 'not_sent') {
      expect(['UND_ERR_CLOSED', 'UND_ERR_DESTROYED']).toContain(result.errorCode);
    }
    expect(api.requests()).toEqual([]);
  });
});

describe('configuration', () => {
  it('refuses a base URL with credentials without echoing them', () => {
    const attempt = () =>
      createGenericMailApiClient({
        baseUrl: 'https://user:hunter2@mail.example.com',
        apiKey: 'k',
        connectTimeoutMs: 1,
        headersTimeoutMs: 1,
        overallTimeoutMs: 1,
        connections: 1,
      });
    expect(attempt).toThrow(MailClientConfigError);
    expect(attempt).not.toThrow(/hunter2/);
  });

  it('reports every bad option at once, and never the key', () => {
    const secret = 'bad key with spaces';
    let thrown: unknown;
    try {
      createGenericMailApiClient({
        baseUrl: 'http://127.0.0.1:1',
        apiKey: secret,
        connectTimeoutMs: 0,
        headersTimeoutMs: 1.5,
        overallTimeoutMs: -1,
        connections: 1,
      });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(MailClientConfigError);
    const message = (thrown as Error).message;
    expect(message).toMatch(/apiKey.*connectTimeoutMs.*headersTimeoutMs.*overallTimeoutMs/);
    expect(message).not.toContain(secret);
    expect(thrown).toMatchObject({ name: 'MailClientConfigError', code: 'ERR_MAIL_CLIENT_CONFIG' });
  });
});
