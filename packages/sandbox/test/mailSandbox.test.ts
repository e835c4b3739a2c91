// The sandbox itself: its mail API answers, its faults, its refusal, its shutdown. Requests go through a
// plain undici client so these tests do not depend on the mail client they exist to test.

import { connect } from 'node:net';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { Fault } from '../src/faults';
import { startMailSandbox, type MailSandbox, type MailSandboxOptions } from '../src/mailSandbox';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandbox(options: MailSandboxOptions = {}): Promise<MailSandbox> {
  const started = await startMailSandbox(options);
  cleanups.push(() => started.close());
  return started;
}

interface Answer {
  status: number | 'error';
  body: unknown;
}

/** Posts raw JSON; a transport error becomes `status: 'error'` so a test can assert on it. */
async function post(
  url: string,
  body: unknown,
  options: { key?: string; path?: string; raw?: string } = {},
): Promise<Answer> {
  const client = new Client(url, { headersTimeout: 5000, bodyTimeout: 5000 });
  try {
    const response = await client.request({
      method: 'POST',
      path: options.path ?? '/v1/messages',
      headers: {
        authorization: `Bearer ${options.key ?? 'sandbox-key'}`,
        'content-type': 'application/json',
      },
      body: options.raw ?? JSON.stringify(body),
    });
    const text = await response.body.text();
    return { status: response.statusCode, body: text === '' ? null : (JSON.parse(text) as unknown) };
  } catch (error) {
    return { status: 'error', body: (error as { code?: string }).code ?? null };
  } finally {
    await client.destroy();
  }
}

function message(orderId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    from: 'shop@example.com',
    to: 'customer@example.com',
    reply_to: null,
    subject: 'Thanks',
    text: 'Confirmed.',
    metadata: { order_id: orderId },
    ...overrides,
  };
}

/** Resolves true if a TCP connect to the port is refused, false if it connects. */
function isRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

describe('mail API', () => {
  it('accepts a valid message with 202 and an id, and records it', async () => {
    const api = await sandbox();
    expect(await post(api.url, message('1'))).toEqual({ status: 202, body: { id: 'sbx_1' } });
    expect(await post(api.url, message('2'))).toEqual({ status: 202, body: { id: 'sbx_2' } });
    expect(api.messages().map((m) => [m.id, m.orderId])).toEqual([
      ['sbx_1', '1'],
      ['sbx_2', '2'],
    ]);
    expect(api.messagesFor('2')).toHaveLength(1);
    expect(api.requests().map((r) => [r.sequence, r.orderId, r.status, r.messageId])).toEqual([
      [1, '1', 202, 'sbx_1'],
      [2, '2', 202, 'sbx_2'],
    ]);
  });

  it.each([
    ['a wrong key', message('1'), { key: 'nope' }, 401, { error: 'unauthorized' }],
    ['malformed JSON', null, { raw: '{"from":' }, 400, { error: 'malformed JSON' }],
    ['a missing subject', message('1', { subject: undefined }), {}, 400, { error: 'missing field: subject' }],
    [
      'a missing order id',
      message('1', { metadata: {} }),
      {},
      400,
      { error: 'missing field: metadata.order_id' },
    ],
    ['an implausible recipient', message('1', { to: 'nobody' }), {}, 422, { error: 'invalid recipient' }],
    ['an unknown path', message('1'), { path: '/v2/messages' }, 404, { error: 'not found' }],
  ])(
    'answers %s as a provider would, and records no message',
    async (_label, body, options, status, answer) => {
      const api = await sandbox();
      expect(await post(api.url, body, options)).toEqual({ status, body: answer });
      expect(api.messages()).toEqual([]);
      expect(api.requests()).toEqual([expect.objectContaining({ status })]);
    },
  );

  it('answers a body over 1 MiB with 413', async () => {
    const api = await sandbox();
    const answer = await post(api.url, message('1', { text: 'x'.repeat(1024 * 1024) }));
    expect(answer).toEqual({ status: 413, body: { error: 'payload too large' } });
    expect(api.messages()).toEqual([]);
  });
});

describe('queued faults', () => {
  it('are consumed in order, per order, and leave other orders alone', async () => {
    const api = await sandbox();
    api.queueFault('7', { kind: 'status', status: 503, retryAfterSeconds: 2 });
    api.queueFault('7', { kind: 'status', status: 429 }, 2);
    api.queueFault('7', { kind: 'status', status: 500, record: true });

    expect((await post(api.url, message('8'))).status).toBe(202);
    const statuses: Array<number | 'error'> = [];
    for (let i = 0; i < 5; i += 1) statuses.push((await post(api.url, message('7'))).status);

    expect(statuses).toEqual([503, 429, 429, 500, 202]);
    // Only the "500 after processing" and the final clean send were accepted for order 7.
    expect(api.messagesFor('7').map((m) => m.fault?.kind ?? null)).toEqual(['status', null]);
  });

  it('are not consumed by a request the provider would refuse anyway', async () => {
    const api = await sandbox();
    api.queueFault('9', { kind: 'status', status: 503 });
    expect((await post(api.url, message('9'), { key: 'wrong' })).status).toBe(401);
    expect((await post(api.url, message('9', { to: 'x' }))).status).toBe(422);
    expect((await post(api.url, message('9'))).status).toBe(503);
  });

  it('send Retry-After with the status', async () => {
    const api = await sandbox();
    api.queueFault('10', { kind: 'status', status: 429, retryAfterSeconds: 3 });
    const client = new Client(api.url);
    cleanups.push(() => client.close());
    const response = await client.request({
      method: 'POST',
      path: '/v1/messages',
      headers: { authorization: 'Bearer sandbox-key' },
      body: JSON.stringify(message('10')),
    });
    await response.body.dump();
    expect(response.statusCode).toBe(429);
    expect(response.headers['retry-after']).toBe('3');
  });

  it('accept-then-drop records the message and answers nothing', async () => {
    const api = await sandbox();
    api.queueFault('11', { kind: 'accept-then-drop' });
    expect(await post(api.url, message('11'))).toMatchObject({ status: 'error' });
    expect(api.messagesFor('11')).toEqual([expect.objectContaining({ fault: { kind: 'accept-then-drop' } })]);
    expect(api.requests()).toEqual([expect.objectContaining({ status: 'dropped', messageId: 'sbx_1' })]);
  });

  it('drop-without-processing records no message', async () => {
    const api = await sandbox();
    api.queueFault('12', { kind: 'drop-without-processing' });
    expect(await post(api.url, message('12'))).toMatchObject({ status: 'error' });
    expect(api.messages()).toEqual([]);
    expect(api.requests()).toEqual([expect.objectContaining({ status: 'dropped', messageId: null })]);
  });

  it('accept-then-hang with ms answers 202 after the delay', async () => {
    const api = await sandbox();
    api.queueFault('13', { kind: 'accept-then-hang', ms: 200 });
    const startedAt = Date.now();
    const answer = await post(api.url, message('13'));
    expect(answer).toEqual({ status: 202, body: { id: 'sbx_1' } });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(190);
    expect(api.requests()).toEqual([expect.objectContaining({ status: 202 })]);
  });

  it('accept-then-hang without ms answers only when released', async () => {
    const api = await sandbox();
    api.queueFault('14', { kind: 'accept-then-hang' });
    const pending = post(api.url, message('14'));
    await waitFor(() => api.requests().length === 1);
    expect(api.requests()[0]?.status).toBe('hung');
    expect(api.messagesFor('14')).toHaveLength(1);

    expect(api.releaseHeld()).toBe(1);
    expect(await pending).toEqual({ status: 202, body: { id: 'sbx_1' } });
    expect(api.releaseHeld()).toBe(0);
  });

  it('close() does not wait for a hung request', async () => {
    const api = await startMailSandbox();
    api.queueFault('15', { kind: 'accept-then-hang' });
    const pending = post(api.url, message('15'));
    await waitFor(() => api.requests().length === 1);
    await api.close();
    // The client got the late 202 or lost the socket; either way it is not left waiting.
    expect([202, 'error']).toContain((await pending).status);
  });

  it('rejects an invalid fault', () => {
    return sandbox().then((api) => {
      expect(() => api.queueFault('1', { kind: 'status', status: 99 })).toThrow(/200 to 599/);
      expect(() => api.queueFault('1', { kind: 'explode' } as unknown as Fault)).toThrow(
        /Unknown fault kind/,
      );
      expect(() =>
        api.setFaultPlan({
          rates: [
            { fault: { kind: 'accept-then-drop' }, probability: 0.8 },
            { fault: { kind: 'accept-then-drop' }, probability: 0.3 },
          ],
        }),
      ).toThrow(/more than 1/);
    });
  });
});

describe('fault plan by rate', () => {
  const plan = {
    rates: [
      { fault: { kind: 'status', status: 503 } as Fault, probability: 0.3 },
      { fault: { kind: 'status', status: 500, record: true } as Fault, probability: 0.2 },
    ],
  };

  async function sequence(seed: number, count: number): Promise<Array<number | 'error'>> {
    const api = await sandbox({ seed, faultPlan: plan });
    const statuses: Array<number | 'error'> = [];
    for (let i = 0; i < count; i += 1) statuses.push((await post(api.url, message(String(i + 1)))).status);
    return statuses;
  }

  it('is deterministic for a seed, and differs between seeds', async () => {
    const first = await sequence(1234, 30);
    const again = await sequence(1234, 30);
    const other = await sequence(99, 30);

    expect(again).toEqual(first);
    expect(other).not.toEqual(first);
    // The plan really applies: all three answers occur in 30 draws with these rates and this seed.
    expect(new Set(first)).toEqual(new Set([202, 503, 500]));
  });

  it('restarts the sequence when the plan is set again', async () => {
    const api = await sandbox({ seed: 5 });
    const run = async (): Promise<Array<number | 'error'>> => {
      api.setFaultPlan(plan);
      const statuses: Array<number | 'error'> = [];
      for (let i = 0; i < 12; i += 1) statuses.push((await post(api.url, message('1'))).status);
      return statuses;
    };
    expect(await run()).toEqual(await run());
  });

  it('queued faults win over the plan', async () => {
    const api = await sandbox({
      faultPlan: { rates: [{ fault: { kind: 'status', status: 503 }, probability: 1 }] },
    });
    api.queueFault('1', { kind: 'status', status: 429 });
    expect((await post(api.url, message('1'))).status).toBe(429);
    expect((await post(api.url, message('1'))).status).toBe(503);
  });

  it('reset() forgets messages, requests, queued faults and the plan', async () => {
    const api = await sandbox({
      faultPlan: { rates: [{ fault: { kind: 'status', status: 503 }, probability: 1 }] },
    });
    api.queueFault('2', { kind: 'status', status: 429 });
    await post(api.url, message('1'));
    api.reset();
    expect(api.messages()).toEqual([]);
    expect(api.requests()).toEqual([]);
    expect((await post(api.url, message('2'))).status).toBe(202);
  });
});

describe('refuseConnectionsFor', () => {
  it('refuses connections, then listens again on the same port', async () => {
    const api = await sandbox();
    const port = api.port;
    await api.refuseConnectionsFor(300);

    expect(await isRefused(port)).toBe(true);
    expect(await post(api.url, message('1'))).toEqual({ status: 'error', body: 'ECONNREFUSED' });

    await api.whenListening();
    expect(api.port).toBe(port);
    expect(await isRefused(port)).toBe(false);
    expect((await post(api.url, message('1'))).status).toBe(202);
    expect(api.requests()).toHaveLength(1);
  });

  it('closing while refusing cancels the reopening', async () => {
    const api = await startMailSandbox();
    await api.refuseConnectionsFor(100);
    await api.close();
    await expect(api.whenListening()).rejects.toMatchObject({ code: 'ERR_SANDBOX_CLOSED' });
    // Give the cancelled timer its chance to (wrongly) reopen, then check the port stayed shut.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await isRefused(api.port)).toBe(true);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
