// The webhook receiver: a small HTTP server of its own (npm run webhooks), apart from the worker's ops port.
// It faces the internet (the providers must reach it), while the worker's /metrics and /readyz must not; it
// needs Postgres only, not Temporal, so it keeps taking events while workers drain or deploy; and it scales
// with the providers' posting rate, not with the send rate.
//   POST /webhooks/sendgrid   SendGrid's signed Event Webhook
//   POST /webhooks/mailgun    Mailgun's webhooks
//   GET  /healthz             the process answers; GET /readyz: and Postgres does
// Every delivery is checked first (signature, timestamp, then shape) and refused with a 4xx that writes
// nothing; an authentic one is stored in one transaction (src/webhooks/providerEvents.ts). A database failure
// answers 503, so the provider delivers again later.
import type { KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Database } from '../db/pool';
import { describeDatabaseError } from '../db/pool';
import { readMailgunDelivery } from './mailgunWebhook';
import { skippedTotal } from './ourEvent';
import type { WebhookProvider } from './providerEvent';
import { storeDelivery } from './providerEvents';
import { readSendGridDelivery } from './sendgridWebhook';
import type { DeliveryVerdict } from './signedDelivery';

export interface WebhookServerOptions {
  db: Database;
  host: string;
  /** 0 picks a free port. */
  port: number;
  sendgridPublicKey: KeyObject | null;
  mailgunSigningKey: string | null;
  maxAgeMs: number;
  /** The receiver's clock, for tests of stale timestamps. Default: the real clock. */
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export interface WebhookServer {
  /** http://host:port */
  url: string;
  close(): Promise<void>;
}

/** SendGrid posts batches of up to 768 KB per its docs; anything far larger is not a webhook of theirs. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;
// Tokens are kept a little longer than the window, so clock steps between us and Postgres cannot open a gap.
const TOKEN_SLACK_MS = 60_000;

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const now = options.now ?? (() => new Date());
  const log = options.log ?? defaultLog;
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log('error', 'Webhook request failed', { path: req.url, error: describeDatabaseError(error) });
      if (!res.headersSent) answer(res, 503, { error: 'could not store the events; deliver again later' });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const provider =
      path === '/webhooks/sendgrid' ? 'sendgrid' : path === '/webhooks/mailgun' ? 'mailgun' : null;
    if (provider === null) {
      await drain(req);
      if (req.method === 'GET' && path === '/healthz') return answer(res, 200, { ok: true });
      if (req.method === 'GET' && path === '/readyz') {
        await options.db.query('SELECT 1');
        return answer(res, 200, { ok: true });
      }
      return answer(res, 404, { error: 'not found: POST /webhooks/sendgrid or /webhooks/mailgun' });
    }
    if (req.method !== 'POST') {
      await drain(req);
      return answer(res, 405, { error: 'method not allowed' }, { allow: 'POST' });
    }
    const body = await readBody(req);
    if (body === 'too-large') return answer(res, 413, { error: 'payload too large' });
    if (body === 'gone') return;

    const verdict = verdictFor(provider, req, body);
    if (verdict === null) {
      return answer(res, 404, { error: `no ${provider} endpoint: its key is not configured` });
    }
    if (!verdict.ok) {
      log('warn', 'Webhook delivery refused', { provider, status: verdict.status, problem: verdict.problem });
      return answer(res, verdict.status, { error: verdict.problem });
    }
    const stored = await storeDelivery(
      options.db,
      provider,
      verdict.delivery,
      new Date(now().getTime() - options.maxAgeMs - TOKEN_SLACK_MS),
    );
    if (stored.kind === 'replayed') {
      log('warn', 'Webhook delivery refused', { provider, status: 409, problem: 'replayed' });
      return answer(res, 409, { error: 'this signed delivery was received before (replay)' });
    }
    log('info', 'Webhook delivery stored', {
      provider,
      newEvents: stored.newEvents,
      knownEvents: stored.knownEvents,
      skipped: verdict.delivery.skipped,
      orders: [...new Set(verdict.delivery.events.map((event) => event.orderId))].slice(0, 20),
    });
    return answer(res, 200, {
      stored: stored.newEvents,
      known: stored.knownEvents,
      skipped: skippedTotal(verdict.delivery.skipped),
      skippedBy: verdict.delivery.skipped,
    });
  }

  function verdictFor(
    provider: WebhookProvider,
    req: IncomingMessage,
    rawBody: Buffer,
  ): DeliveryVerdict | null {
    if (provider === 'sendgrid') {
      if (options.sendgridPublicKey === null) return null;
      return readSendGridDelivery({
        headers: req.headers,
        rawBody,
        publicKey: options.sendgridPublicKey,
        now: now(),
        maxAgeMs: options.maxAgeMs,
      });
    }
    if (options.mailgunSigningKey === null) return null;
    return readMailgunDelivery({
      rawBody,
      signingKey: options.mailgunSigningKey,
      now: now(),
      maxAgeMs: options.maxAgeMs,
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.removeListener('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = address !== null && typeof address === 'object' ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}

/** The whole body; an oversized one is still read to its end (unread bytes would make the close a reset). */
function readBody(req: IncomingMessage): Promise<Buffer | 'too-large' | 'gone'> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > MAX_BODY_BYTES ? 'too-large' : Buffer.concat(chunks)));
    req.on('error', () => resolve('gone'));
    req.on('close', () => resolve('gone'));
  });
}

async function drain(req: IncomingMessage): Promise<void> {
  await readBody(req);
}

function answer(
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

function defaultLog(level: string, message: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ level, component: 'webhooks', message, ...fields }));
}
