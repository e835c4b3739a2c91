// Transport behaviours the sandbox does not emulate, each against a small real loopback server (node:http
// where it can play the part, raw TCP or TLS where it cannot): a TLS handshake that never completes, a broken
// body after a 2xx, a 2xx without an id, the stale keep-alive race, and a TLS server that offers HTTP/2.

import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createSecureServer } from 'node:http2';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createGenericMailApiClient,
  type GenericMailApiClientOptions,
} from '../../dev/devtools/genericMailApiClient';
import type { MailTransport, OutgoingMail } from '../../src/mail/types';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function client(baseUrl: string, overrides: Partial<GenericMailApiClientOptions> = {}): MailTransport {
  const created = createGenericMailApiClient({
    baseUrl,
    apiKey: 'test-key',
    connectTimeoutMs: 2000,
    headersTimeoutMs: 5000,
    overallTimeoutMs: 10_000,
    connections: 1,
    ...overrides,
  });
  cleanups.push(() => created.close());
  return created;
}

const MAIL: OutgoingMail = {
  orderId: '42',
  to: 'customer@example.com',
  from: 'shop@example.com',
  replyTo: null,
  subject: 'Thanks',
  text: 'Confirmed.',
  html: '<p>Confirmed.</p>',
};

/** A TCP server that keeps every socket; closing it destroys them, so nothing outlives the test. */
async function tcpServer(onSocket: (socket: Socket) => void): Promise<{ server: TcpServer; port: number }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    onSocket(socket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { server, port: (server.address() as { port: number }).port };
}

async function httpServer(
  handler: Parameters<typeof createHttpServer>[1],
): Promise<{ server: HttpServer; url: string }> {
  const server = createHttpServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('connect phase', () => {
  it('a TLS handshake that never completes is a connect timeout: not_sent', async () => {
    // TCP connects at once on loopback, so the only reliable connect timeout is one in the TLS handshake,
    // which undici's connect timer also covers (it runs from the TCP connect until the TLS session is up).
    let bytesSeen = 0;
    const { port } = await tcpServer((socket) =>
      socket.on('data', (chunk: Buffer) => (bytesSeen += chunk.length)),
    );
    const result = await client(`https://127.0.0.1:${port}`, { connectTimeoutMs: 200 }).send(MAIL);

    expect(result).toMatchObject({
      outcome: 'not_sent',
      httpStatus: null,
      errorCode: 'UND_ERR_CONNECT_TIMEOUT',
    });
    // The server saw a ClientHello and nothing else: no HTTP request.
    expect(bytesSeen).toBeGreaterThan(0);
  });
});

describe('after a 2xx', () => {
  it('a body that breaks off does not undo the acceptance', async () => {
    const { url } = await httpServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(202, { 'content-type': 'application/json', 'content-length': '100' });
        res.write('{"id":"msg_');
        // Let the head and the first bytes go out, then break the promised body off.
        setImmediate(() => res.socket?.destroy());
      });
    });
    const result = await client(url).send(MAIL);
    expect(result).toEqual({ outcome: 'accepted', httpStatus: 202, providerMessageId: null });
  });

  it('a body that is not JSON, or has no id, is still an acceptance', async () => {
    const bodies = ['queued', '{"status":"queued"}', '{"id":17}', ''];
    const { url } = await httpServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(bodies.shift()));
    });
    const transport = client(url);
    for (let i = 0; i < 4; i += 1) {
      expect(await transport.send(MAIL)).toEqual({
        outcome: 'accepted',
        httpStatus: 200,
        providerMessageId: null,
      });
    }
  });

  it('sends the documented request: path, bearer key, JSON body with the order id and send key as metadata', async () => {
    let seen: {
      method?: string;
      url?: string;
      authorization?: string;
      contentType?: string;
      body?: unknown;
    } = {};
    const { url } = await httpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        seen = {
          method: req.method,
          url: req.url,
          authorization: req.headers.authorization,
          contentType: req.headers['content-type'],
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown,
        };
        res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"msg_9"}');
      });
    });
    expect(await client(url).send(MAIL)).toMatchObject({ outcome: 'accepted', providerMessageId: 'msg_9' });
    expect(seen).toEqual({
      method: 'POST',
      url: '/v1/messages',
      authorization: 'Bearer test-key',
      contentType: 'application/json',
      body: {
        from: 'shop@example.com',
        to: 'customer@example.com',
        reply_to: null,
        subject: 'Thanks',
        text: 'Confirmed.',
        html: '<p>Confirmed.</p>',
        // The send key the gateway's lookup finds the send by (docs/providers.md, the gateway lookup).
        metadata: { order_id: '42', send_key: 'order-confirmation/default/42/0' },
      },
    });
  });
});

describe('stale keep-alive socket', () => {
  it('a POST on a reused socket that the server closes on arrival is unknown, and is not re-sent', async () => {
    // Raw TCP, because node:http cannot promise keep-alive and then close on the next request: with a short
    // keepAliveTimeout it answers `Keep-Alive: timeout=0`, and undici then never reuses the socket at all.
    let connections = 0;
    let requestsAnswered = 0;
    const { port } = await tcpServer((socket) => {
      connections += 1;
      let buffered = '';
      let answered = false;
      socket.on('data', (chunk: Buffer) => {
        if (answered) {
          // The second request's bytes arrived: close without processing them.
          socket.destroy();
          return;
        }
        buffered += chunk.toString('latin1');
        const headEnd = buffered.indexOf('\r\n\r\n');
        const length = /content-length: *(\d+)/i.exec(buffered)?.[1];
        if (headEnd === -1 || length === undefined || buffered.length < headEnd + 4 + Number(length)) return;
        answered = true;
        requestsAnswered += 1;
        const body = '{"id":"msg_1"}';
        socket.write(
          `HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
            `connection: keep-alive\r\nkeep-alive: timeout=60\r\n\r\n${body}`,
        );
      });
    });
    const transport = client(`http://127.0.0.1:${port}`, { connections: 1 });

    expect(await transport.send(MAIL)).toMatchObject({ outcome: 'accepted', providerMessageId: 'msg_1' });
    const second = await transport.send(MAIL);

    expect(second).toMatchObject({ outcome: 'unknown', httpStatus: null });
    if (second.outcome === 'unknown') {
      expect(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']).toContain(second.errorCode);
    }
    expect(requestsAnswered).toBe(1);
    // One connection: the second POST rode the reused socket and undici did not retry it on a new one.
    expect(connections).toBe(1);
  });
});

describe('HTTP version', () => {
  it('a TLS server that offers HTTP/2 (undici 8 negotiates it by default) still gets the send over HTTP/1.1', async () => {
    // The send's evidence is HTTP/1.1's: one request per pool connection (MAIL_CONNECTIONS counts requests
    // past the fence), and undici's HTTP/2 client replays a stream refused by a GOAWAY after the request
    // started, which the phase interceptor would not see as a second request.
    const directory = mkdtempSync(path.join(tmpdir(), 'h2-offer-'));
    cleanups.push(async () => rmSync(directory, { recursive: true, force: true }));
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(directory, 'key.pem'),
        '-out',
        path.join(directory, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(path.join(directory, 'cert.pem'), 'utf8');
    const versions: string[] = [];
    const server = createSecureServer(
      { key: readFileSync(path.join(directory, 'key.pem')), cert, allowHTTP1: true },
      (req, res) => {
        versions.push(req.httpVersion);
        req.resume();
        req.on('end', () => res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":"msg_h"}'));
      },
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    // The process's default CAs gain the test's certificate for this test only.
    const defaults = getCACertificates('default');
    setDefaultCACertificates([...defaults, cert]);
    cleanups.push(async () => {
      setDefaultCACertificates(defaults);
      await new Promise((resolve) => server.close(resolve));
    });

    const transport = client(`https://127.0.0.1:${(server.address() as { port: number }).port}`);
    expect(await transport.send(MAIL)).toMatchObject({ outcome: 'accepted', providerMessageId: 'msg_h' });
    expect(versions).toEqual(['1.1']);
  });
});
