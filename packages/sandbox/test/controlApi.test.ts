// The control API, driven by the typed control client as another process would, plus the standalone CLI
// as a child process.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { Client } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startMailSandbox, type MailSandbox } from '../src/mailSandbox';
import {
  createSandboxControlClient,
  SandboxControlError,
  type SandboxControlClient,
} from '../src/sandboxControlClient';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sandboxWithControl(): Promise<{ api: MailSandbox; control: SandboxControlClient }> {
  const api = await startMailSandbox();
  cleanups.push(() => api.close());
  const control = createSandboxControlClient(api.url, { timeoutMs: 3000 });
  cleanups.push(() => control.close());
  return { api, control };
}

async function post(url: string, orderId: string): Promise<number | string> {
  const client = new Client(url, { headersTimeout: 5000 });
  try {
    const response = await client.request({
      method: 'POST',
      path: '/v1/messages',
      headers: { authorization: 'Bearer sandbox-key', 'content-type': 'application/json' },
      body: JSON.stringify({
        from: 'a@example.com',
        to: 'b@example.com',
        subject: 's',
        text: 't',
        metadata: { order_id: orderId },
      }),
    });
    await response.body.dump();
    return response.statusCode;
  } catch (error) {
    return (error as { code?: string }).code ?? 'error';
  } finally {
    await client.destroy();
  }
}

describe('control API through the control client', () => {
  it('queues faults and reads back messages and requests', async () => {
    const { api, control } = await sandboxWithControl();
    await control.queueFault('1', { kind: 'status', status: 503 });
    await control.queueFaults([{ orderId: '2', fault: { kind: 'accept-then-drop' }, times: 2 }]);

    expect(await post(api.url, '1')).toBe(503);
    expect(await post(api.url, '1')).toBe(202);
    expect(await post(api.url, '2')).not.toBe(202);
    expect(await post(api.url, '2')).not.toBe(202);
    expect(await post(api.url, '2')).toBe(202);

    expect((await control.messages()).map((m) => m.orderId)).toEqual(['1', '2', '2', '2']);
    expect(await control.messages('1')).toEqual([
      expect.objectContaining({ orderId: '1', to: 'b@example.com' }),
    ]);
    expect((await control.requests()).map((r) => r.status)).toEqual([503, 202, 'dropped', 'dropped', 202]);
  });

  it('sets a fault plan', async () => {
    const { api, control } = await sandboxWithControl();
    await control.setFaultPlan({ rates: [{ fault: { kind: 'status', status: 502 }, probability: 1 }] });
    expect(await post(api.url, '1')).toBe(502);
  });

  it('releases held requests', async () => {
    const { api, control } = await sandboxWithControl();
    await control.queueFault('1', { kind: 'accept-then-hang' });
    const pending = post(api.url, '1');
    await waitFor(async () => (await control.requests()).length === 1);
    expect(await control.releaseHeld()).toBe(1);
    expect(await pending).toBe(202);
  });

  it('resets', async () => {
    const { api, control } = await sandboxWithControl();
    await post(api.url, '1');
    await control.reset();
    expect(await control.messages()).toEqual([]);
    expect(await control.requests()).toEqual([]);
  });

  it('refuses connections for a while', async () => {
    const { api, control } = await sandboxWithControl();
    await control.refuseConnectionsFor(300);
    expect(await post(api.url, '1')).toBe('ECONNREFUSED');
    await api.whenListening();
    expect(await post(api.url, '1')).toBe(202);
  });

  it('reports a bad fault as a SandboxControlError with the status', async () => {
    const { control } = await sandboxWithControl();
    const failure = control.queueFault('1', { kind: 'status', status: 42 });
    await expect(failure).rejects.toBeInstanceOf(SandboxControlError);
    await expect(failure).rejects.toMatchObject({ status: 400, code: 'ERR_SANDBOX_CONTROL' });
  });

  it('reports an unreachable sandbox as a SandboxControlError', async () => {
    const api = await startMailSandbox();
    await api.close();
    const control = createSandboxControlClient(api.url, { timeoutMs: 1000 });
    cleanups.push(() => control.close());
    await expect(control.messages()).rejects.toMatchObject({ name: 'SandboxControlError', status: null });
  });
});

describe('npm run sandbox (packages/sandbox/src/cli.ts)', () => {
  it('starts from the environment, prints its URL, applies SANDBOX_FAULTS and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'src', 'cli.ts')], {
      env: {
        ...process.env,
        SANDBOX_PORT: '0',
        SANDBOX_FAULTS: JSON.stringify({
          rates: [{ fault: { kind: 'status', status: 503 }, probability: 1 }],
        }),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = once(child, 'exit');
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));

    await waitFor(async () => /listening on (http:\/\/\S+?)[ ;(]/.test(output), 20_000);
    const url = /listening on (http:\/\/\S+?)[ ;(]/.exec(output)?.[1] ?? '';
    expect(await post(url, '1')).toBe(503);

    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(output).toContain('stopping (SIGTERM)');
  }, 30_000);
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
