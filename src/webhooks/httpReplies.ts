// The receiver's HTTP plumbing: which endpoint a request is for, reading a body under a cap (never to its end
// once past it), and the JSON answers, with the connection closed when the rest of a body must not be read.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { WebhookProvider } from './normalizedEvent';
import type { RequestOutcome } from './webhookMetrics';

export function providerOf(req: IncomingMessage): WebhookProvider | null {
  const path = (req.url ?? '/').split('?')[0];
  return path === '/webhooks/sendgrid'
    ? 'sendgrid'
    : path === '/webhooks/mailgun'
      ? 'mailgun'
      : path === '/webhooks/ses'
        ? 'ses'
        : null;
}

/** The body; 'too-large' the moment it passes the cap; 'gone' when the client left or timed out. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | 'too-large' | 'gone'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        req.removeListener('data', onData);
        req.pause();
        chunks.length = 0;
        resolve('too-large');
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve('gone'));
    req.on('close', () => resolve('gone'));
  });
}

export function tooLarge(req: IncomingMessage, res: ServerResponse, count: () => void): void {
  count();
  answerAndClose(req, res, 413, { error: 'payload too large' });
}

/** Answers, then closes the connection once the answer is out: the rest of the body is never read. */
export function answerAndClose(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
): void {
  answer(res, status, body, { connection: 'close' });
  res.once('finish', () => req.socket.destroySoon());
}

export function answer(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(text)),
    ...headers,
  });
  res.end(text);
}

export function defaultLog(level: string, message: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ level, component: 'webhooks', message, ...fields }));
}

/** How a refused delivery is counted: malformed (400), stale (its timestamp), or unsigned (any other 401/403). */
export function refusalOutcome(verdict: { status: number; problem: string }): RequestOutcome {
  return verdict.status === 400 ? 'malformed' : /stale/.test(verdict.problem) ? 'stale' : 'unsigned';
}
