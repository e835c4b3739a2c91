// Small request/response helpers shared by the sandbox's mail API and control API.

import type { IncomingMessage, ServerResponse } from 'node:http';

export const MAX_BODY_BYTES = 1024 * 1024;

export type BodyReading =
  { kind: 'complete'; text: string } | { kind: 'too-large' } | { kind: 'client-gone' };

/**
 * Reads the whole request body. A body over the limit is still drained, not left unread: closing a socket
 * with unread bytes makes Linux send a RST, and the client would see a reset instead of our 413.
 */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<BodyReading> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => {
      resolve(
        size > limit
          ? { kind: 'too-large' }
          : { kind: 'complete', text: Buffer.concat(chunks).toString('utf8') },
      );
    });
    // 'close' before 'end' means the client went away mid-body; resolving twice is harmless.
    req.on('close', () => resolve({ kind: 'client-gone' }));
    req.on('error', () => resolve({ kind: 'client-gone' }));
  });
}

export function sendJson(
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

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}
