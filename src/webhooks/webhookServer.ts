// The webhook receiver, a process of its own facing the internet: what a request may cost is bounded before
// anything is looked at. Endpoints and checks: docs/providers.md, Webhooks; limits: docs/production.md.
import type { KeyObject } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Database } from '../db/pool';
import { describeDatabaseError } from '../db/pool';
import { MAILGUN_MAX_BODY_BYTES } from './mailgunWebhook';
import { skippedTotal } from './ourEvent';
import type { WebhookProvider } from './normalizedEvent';
import { storeDelivery } from './providerEvents';
import { readSignedDelivery } from './readSignedDelivery';
import {
  confirmSnsSubscription,
  readSnsDelivery,
  SnsCertificates,
  snsTokenWindowMs,
  type SnsSettings,
  type SnsVerdict,
} from './snsWebhook';
import {
  answer,
  answerAndClose,
  defaultLog,
  providerOf,
  readBody,
  refusalOutcome,
  tooLarge,
} from './httpReplies';
import { WebhookMetrics, type RequestOutcome } from './webhookMetrics';

export interface WebhookServerOptions {
  db: Database;
  host: string;
  /** 0 picks a free port. */
  port: number;
  sendgridPublicKey: KeyObject | null;
  mailgunSigningKey: string | null;
  /** SES events by SNS: the topics taken and where certificates may come from; null for no /webhooks/ses. */
  sns?: SnsSettings | null;
  /** Tests and the chaos run only, never from the environment: where SNS certificates come from. */
  snsCertificates?: SnsCertificates;
  maxAgeMs: number;
  /** Default 1 MiB. */
  maxBodyBytes?: number;
  /** The whole request must be received within this (default 15 s); the headers within min(it, 10 s). */
  requestTimeoutMs?: number;
  /** Default 128. */
  maxConnections?: number;
  /** Where requests and events are counted; default: a registry of the server's own. */
  metrics?: WebhookMetrics;
  /** The receiver's clock, for tests of stale timestamps. Default: the real clock. */
  now?: () => Date;
  log?: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export interface WebhookServer {
  /** http://host:port */
  url: string;
  metrics: WebhookMetrics;
  close(): Promise<void>;
}

/** SendGrid posts batches of up to 768 KB per its docs; anything far larger is not a webhook of theirs. */
const DEFAULT_MAX_BODY_BYTES = 1_048_576;
const DEFAULT_REQUEST_TIMEOUT_MS = 15_000;
const HEADERS_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_CONNECTIONS = 128;
// Both providers post JSON (Mailgun's webhooks since its v3 "webhooks" API; the legacy form posts are not
// supported); anything else is refused before its body is read. SNS posts its JSON as text/plain.
const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i;
const SNS_CONTENT_TYPE = /^(text\/plain|application\/json)\s*(;|$)/i;
// Tokens are kept a little longer than the window, so clock steps between us and Postgres cannot open a gap.
const TOKEN_SLACK_MS = 60_000;

export async function startWebhookServer(options: WebhookServerOptions): Promise<WebhookServer> {
  const now = options.now ?? (() => new Date());
  const log = options.log ?? defaultLog;
  const metrics = options.metrics ?? new WebhookMetrics();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const sns = options.sns ?? null;
  const certificates = options.snsCertificates ?? new SnsCertificates();
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
      // Node checks both timeouts on this interval (30 s by default): a slow body must be cut off in time.
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: 5_000,
      maxHeaderSize: 16_384,
    },
    (req, res) => {
      handle(req, res).catch((error: unknown) => {
        log('error', 'Webhook request failed', { path: req.url, error: describeDatabaseError(error) });
        metrics.request(providerOf(req) ?? 'none', 'database-error');
        if (!res.headersSent) answer(res, 503, { error: 'could not store the events; deliver again later' });
        else res.destroy();
      });
    },
  );
  server.maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  server.maxHeadersCount = 100;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const provider = providerOf(req);
    const refuse = (outcome: RequestOutcome, status: number, body: unknown, headers = {}): void => {
      metrics.request(provider ?? 'none', outcome);
      answer(res, status, body, headers);
    };
    if (provider === null) {
      const body = await readBody(req, maxBodyBytes);
      if (body === 'too-large') return tooLarge(req, res, () => metrics.request('none', 'too-large'));
      if (body === 'gone') return;
      if (req.method === 'GET' && path === '/healthz') return answer(res, 200, { ok: true });
      if (req.method === 'GET' && path === '/readyz') {
        await options.db.query('SELECT 1');
        return answer(res, 200, { ok: true });
      }
      return refuse('not-found', 404, {
        error: 'not found: POST /webhooks/sendgrid, /webhooks/mailgun or /webhooks/ses',
      });
    }
    if (req.method !== 'POST') {
      const body = await readBody(req, maxBodyBytes);
      if (body === 'too-large') return tooLarge(req, res, () => metrics.request(provider, 'too-large'));
      return refuse('method-not-allowed', 405, { error: 'method not allowed' }, { allow: 'POST' });
    }
    // Refused before a byte of the body is read: a provider not configured, a stated length over the cap, a
    // type that is not JSON.
    const configured =
      provider === 'sendgrid'
        ? options.sendgridPublicKey
        : provider === 'mailgun'
          ? options.mailgunSigningKey
          : sns;
    if (configured === null) {
      metrics.request(provider, 'not-configured');
      return answerAndClose(req, res, 404, { error: `no ${provider} endpoint: its key is not configured` });
    }
    // A Mailgun body is parsed before its signature can be checked (it is inside the JSON), so it gets a cap
    // of its own, the size of a Mailgun event, not the general one (src/webhooks/mailgunWebhook.ts).
    const cap = provider === 'mailgun' ? Math.min(maxBodyBytes, MAILGUN_MAX_BODY_BYTES) : maxBodyBytes;
    const declared = Number(req.headers['content-length'] ?? 0);
    if (Number.isFinite(declared) && declared > cap) {
      return tooLarge(req, res, () => metrics.request(provider, 'too-large'));
    }
    if (
      !(provider === 'ses' ? SNS_CONTENT_TYPE : JSON_CONTENT_TYPE).test(req.headers['content-type'] ?? '')
    ) {
      metrics.request(provider, 'unsupported-media-type');
      return answerAndClose(req, res, 415, { error: 'the body must be application/json' });
    }
    const body = await readBody(req, cap);
    if (body === 'too-large') return tooLarge(req, res, () => metrics.request(provider, 'too-large'));
    if (body === 'gone') {
      metrics.request(provider, 'incomplete');
      return;
    }

    if (provider === 'ses' && sns !== null) {
      return takeSns(
        await readSnsDelivery({
          headers: req.headers,
          rawBody: body,
          settings: sns,
          certificates,
          now: now(),
          maxAgeMs: options.maxAgeMs,
        }),
        refuse,
        res,
      );
    }
    const verdict = readSignedDelivery(provider, { ...options, now: now() }, req.headers, body);
    if (verdict === null) {
      return refuse('not-configured', 404, { error: `no ${provider} endpoint: its key is not configured` });
    }
    if (!verdict.ok) {
      log('warn', 'Webhook delivery refused', { provider, status: verdict.status, problem: verdict.problem });
      return refuse(refusalOutcome(verdict), verdict.status, { error: verdict.problem });
    }
    const stored = await storeDelivery(
      options.db,
      provider,
      verdict.delivery,
      new Date(now().getTime() - options.maxAgeMs - TOKEN_SLACK_MS),
    );
    return answerStored(provider, verdict.delivery, stored, refuse, res);
  }

  type Refuse = (
    outcome: RequestOutcome,
    status: number,
    body: unknown,
    headers?: Record<string, string>,
  ) => void;

  function answerStored(
    provider: WebhookProvider,
    delivery: Parameters<typeof storeDelivery>[2],
    stored: Awaited<ReturnType<typeof storeDelivery>>,
    refuse: Refuse,
    res: ServerResponse,
  ): void {
    if (stored.kind === 'replayed') {
      log('warn', 'Webhook delivery refused', { provider, status: 409, problem: 'replayed' });
      return refuse('replayed', 409, { error: 'this signed delivery was received before (replay)' });
    }
    metrics.request(provider, 'stored');
    metrics.eventsOf(provider, stored.newEvents, stored.knownEvents, delivery.skipped);
    log('info', 'Webhook delivery stored', {
      provider,
      newEvents: stored.newEvents,
      knownEvents: stored.knownEvents,
      skipped: delivery.skipped,
      orders: [...new Set(delivery.events.map((event) => event.orderId))].slice(0, 20),
    });
    return answer(res, 200, {
      stored: stored.newEvents,
      known: stored.knownEvents,
      skipped: skippedTotal(delivery.skipped),
      skippedBy: delivery.skipped,
    });
  }

  /** An SNS message, once read: stored, confirmed, or refused with nothing written. */
  async function takeSns(verdict: SnsVerdict, refuse: Refuse, res: ServerResponse): Promise<void> {
    if (!verdict.ok) {
      log('warn', 'Webhook delivery refused', {
        provider: 'ses',
        status: verdict.status,
        problem: verdict.problem,
      });
      const outcome = verdict.status === 503 ? 'certificate-busy' : refusalOutcome(verdict);
      return refuse(outcome, verdict.status, { error: verdict.problem });
    }
    if (verdict.kind === 'subscribe') {
      // Confirming is a GET of the URL SNS signed, on an SNS host; nothing is stored.
      const confirmed = await confirmSnsSubscription(verdict.subscribeUrl);
      if (confirmed !== 'confirmed') {
        log('warn', 'SNS subscription could not be confirmed', {
          topicArn: verdict.topicArn,
          status: confirmed.status,
        });
        metrics.request('ses', 'subscribe-failed');
        // SNS sends the confirmation again later.
        return answer(res, 502, { error: 'the subscription could not be confirmed; SNS will ask again' });
      }
      log('info', 'SNS subscription confirmed', { topicArn: verdict.topicArn });
      metrics.request('ses', 'confirmed');
      return answer(res, 200, { confirmed: true });
    }
    if (verdict.kind === 'unsubscribed') {
      log('warn', 'SNS says the subscription ended', { topicArn: verdict.topicArn });
      metrics.request('ses', 'confirmed');
      return answer(res, 200, { unsubscribed: true });
    }
    // SNS retries a message for up to SNS_MAX_RETRY_S under its first Timestamp: its MessageId is kept as long.
    const stored = await storeDelivery(
      options.db,
      'ses',
      verdict.delivery,
      new Date(now().getTime() - snsTokenWindowMs(sns ?? {}, options.maxAgeMs) - TOKEN_SLACK_MS),
    );
    return answerStored('ses', verdict.delivery, stored, refuse, res);
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
    metrics,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      return closing;
    },
  };
}
