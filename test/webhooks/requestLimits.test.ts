// What a request may cost the receiver, bounded before its body is looked at (issue 22, finding 11), on a
// real server over loopback with raw sockets: a stated length over the cap is answered 413 at once, without
// waiting for (or reading) the body; a body that never completes is cut off by the request timeout; and
// connections past the limit are closed.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SandboxWebhooks } from '../../packages/sandbox/src/webhooks';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/webhookServer';
import { openTestDatabase, type TestDatabase } from '../support/testKit';

let database: TestDatabase;
let receiver: WebhookServer;
let port: number;

beforeAll(async () => {
  database = await openTestDatabase('webhook_limits');
  receiver = await startWebhookServer({
    db: database.db,
    host: '127.0.0.1',
    port: 0,
    sendgridPublicKey: null,
    mailgunSigningKey: new SandboxWebhooks({}, 1).mailgunSigningKey,
    maxAgeMs: 300_000,
    maxBodyBytes: 4_096,
    requestTimeoutMs: 1_500,
    maxConnections: 2,
    log: () => undefined,
  });
  port = Number(new URL(receiver.url).port);
});

afterAll(async () => {
  await receiver?.close();
  await database?.close();
});

/** Writes `text` on a new connection; resolves with what came back and when the server closed it. */
function exchange(text: string): {
  socket: Socket;
  done: Promise<{ answer: string; closedAfterMs: number }>;
} {
  const started = Date.now();
  let answer = '';
  const socket = connect(port, '127.0.0.1', () => socket.write(text));
  const done = new Promise<{ answer: string; closedAfterMs: number }>((resolve) => {
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve({ answer, closedAfterMs: Date.now() - started }));
  });
  return { socket, done };
}

const headers = (length: number) =>
  `POST /webhooks/mailgun HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${length}\r\n\r\n`;

it('a stated length over the cap: 413 at once, the body never awaited', async () => {
  const { done } = exchange(headers(50_000_000));
  const { answer, closedAfterMs } = await done;
  expect(answer).toMatch(/^HTTP\/1\.1 413/);
  expect(closedAfterMs).toBeLessThan(1_000);
});

it('a body that never completes is cut off by the request timeout', async () => {
  const { done } = exchange(`${headers(1_000)}{"signature":`);
  const { answer, closedAfterMs } = await done;
  expect(answer).toMatch(/^HTTP\/1\.1 408/);
  expect(closedAfterMs).toBeLessThan(1_500 + 2_500);
});

it('connections past the limit are closed at once', async () => {
  const held = [exchange(headers(1_000)), exchange(headers(1_000))];
  await new Promise((resolve) => setTimeout(resolve, 200));
  const third = exchange('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n');
  const { answer, closedAfterMs } = await third.done;
  expect(answer).toBe('');
  expect(closedAfterMs).toBeLessThan(1_000);
  for (const { socket } of held) socket.destroy();
});
