// The receiver's own Prometheus metrics, on a loopback port of its own (its public port faces the internet).
import { createServer, type Server } from 'node:http';
import { listenHttp } from '../metrics/listenHttp';
import type { Skipped } from './ourEvent';

export type RequestOutcome =
  | 'stored'
  | 'unsigned'
  | 'stale'
  | 'malformed'
  | 'replayed'
  | 'too-large'
  | 'incomplete'
  | 'unsupported-media-type'
  | 'not-configured'
  | 'not-found'
  | 'method-not-allowed'
  | 'database-error'
  /** SNS: a subscription (or its end) confirmed; or the confirming GET failed. */
  | 'confirmed'
  | 'subscribe-failed'
  /** SNS: every signing certificate fetch was in flight; answered 503, so SNS delivers it again. */
  | 'certificate-busy';

export class WebhookMetrics {
  private readonly requests = new Map<string, number>();
  private readonly events = new Map<string, number>();

  request(provider: string, outcome: RequestOutcome): void {
    bump(this.requests, `provider="${provider}",outcome="${outcome}"`, 1);
  }

  eventsOf(provider: string, stored: number, known: number, skipped: Skipped): void {
    if (stored > 0) bump(this.events, `provider="${provider}",result="stored"`, stored);
    if (known > 0) bump(this.events, `provider="${provider}",result="known"`, known);
    for (const [reason, count] of Object.entries(skipped)) {
      bump(this.events, `provider="${provider}",result="skipped_${reason.replace(/-/g, '_')}"`, count);
    }
  }

  /** The count of one request series, for tests. */
  requestCount(provider: string, outcome: RequestOutcome): number {
    return this.requests.get(`provider="${provider}",outcome="${outcome}"`) ?? 0;
  }

  exposition(): string {
    const lines = [
      '# HELP order_mail_webhook_requests_total Webhook requests, by provider and how they were answered.',
      '# TYPE order_mail_webhook_requests_total counter',
      ...[...this.requests].map(([labels, value]) => `order_mail_webhook_requests_total{${labels}} ${value}`),
      '# HELP order_mail_webhook_events_total Events of authentic deliveries: stored, known, or skipped by why.',
      '# TYPE order_mail_webhook_events_total counter',
      ...[...this.events].map(([labels, value]) => `order_mail_webhook_events_total{${labels}} ${value}`),
      '# HELP process_resident_memory_bytes Resident memory of the receiver process.',
      '# TYPE process_resident_memory_bytes gauge',
      `process_resident_memory_bytes ${process.memoryUsage.rss()}`,
      '# HELP nodejs_heap_size_used_bytes V8 heap in use.',
      '# TYPE nodejs_heap_size_used_bytes gauge',
      `nodejs_heap_size_used_bytes ${process.memoryUsage().heapUsed}`,
    ];
    return `${lines.join('\n')}\n`;
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

/** GET /metrics on host:port; anything else 404. Resolves with the server once it listens. */
export async function startWebhookMetricsServer(
  metrics: WebhookMetrics,
  host: string,
  port: number,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    req.resume();
    if (req.method === 'GET' && (req.url ?? '').split('?')[0] === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      res.end(metrics.exposition());
      return;
    }
    res.writeHead(404).end();
  });
  server.requestTimeout = 5_000;
  server.headersTimeout = 5_000;
  return listenHttp(server, host, port);
}
