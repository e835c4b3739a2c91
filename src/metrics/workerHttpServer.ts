// The worker's one HTTP port: /metrics (the runtime's, passed through), /healthz, /readyz
// (docs/production.md, "Metrics, health, alerts").
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { singleFlightRefresher, type GaugeRefresher } from './gaugeRefresh';
import { listenHttp } from './listenHttp';

export type WorkerLiveness = 'waiting' | 'starting' | 'running' | 'stopping' | 'failed';

export interface WorkerHttpServerOptions {
  bindAddress: string;
  runtimeMetricsUrl: string;
  /** On failure the scrape still answers with the last values. */
  refreshGauges: () => Promise<void>;
  gaugeRefreshIntervalMs?: number;
  workerState: () => WorkerLiveness;
  waitingFor?: () => string | null;
  checkDatabase: () => Promise<void>;
  checkTemporal?: () => Promise<void>;
  log: (level: 'info' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export interface WorkerHttpServer {
  url: string;
  close(): Promise<void>;
}

// A scrape or a probe must answer well inside Prometheus's and Kubernetes's default timeouts (10 s, 1 s).
const REFRESH_TIMEOUT_MS = 3_000;
const DEPENDENCY_CHECK_TIMEOUT_MS = 800;

export async function startWorkerHttpServer(options: WorkerHttpServerOptions): Promise<WorkerHttpServer> {
  const gauges = singleFlightRefresher(options.refreshGauges, options.gaugeRefreshIntervalMs ?? 0);
  const server = createServer((req, res) => {
    handle(options, gauges, req, res).catch((error: unknown) => {
      options.log('error', 'Worker HTTP request failed', { path: req.url, error: messageOf(error) });
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    });
  });
  const { host, port } = splitHostPort(options.bindAddress);
  return listenHttp(server, host, port);
}

async function handle(
  options: WorkerHttpServerOptions,
  gauges: GaugeRefresher,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  switch (path) {
    case '/metrics':
      await serveMetrics(options, gauges, res);
      return;
    case '/healthz': {
      const state = options.workerState();
      const live = state !== 'failed';
      res.writeHead(live ? 200 : 503, { 'content-type': 'text/plain' }).end(`${state}\n`);
      return;
    }
    case '/readyz': {
      const state = options.workerState();
      const waitingFor = options.waitingFor?.() ?? null;
      if (state !== 'running') {
        const why = waitingFor === null ? `worker is ${state}` : `waiting for ${waitingFor}`;
        res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready: ${why}\n`);
        return;
      }
      try {
        await Promise.all([
          withTimeout(options.checkDatabase(), DEPENDENCY_CHECK_TIMEOUT_MS, 'Postgres did not answer'),
          options.checkTemporal === undefined
            ? undefined
            : withTimeout(options.checkTemporal(), DEPENDENCY_CHECK_TIMEOUT_MS, 'Temporal did not answer'),
        ]);
      } catch (error) {
        res.writeHead(503, { 'content-type': 'text/plain' }).end(`not ready: ${messageOf(error)}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ready\n');
      return;
    }
    default:
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: try /metrics, /healthz, /readyz\n');
  }
}

async function serveMetrics(
  options: WorkerHttpServerOptions,
  gauges: GaugeRefresher,
  res: ServerResponse,
): Promise<void> {
  try {
    await withTimeout(gauges.refresh(), REFRESH_TIMEOUT_MS, 'gauge refresh timed out');
  } catch (error) {
    options.log('error', 'Could not refresh the gauges read from Postgres; serving the last values', {
      error: messageOf(error),
    });
  }
  const upstream = await new Promise<IncomingMessage>((resolve, reject) => {
    const scrape = request(options.runtimeMetricsUrl, { timeout: REFRESH_TIMEOUT_MS }, resolve);
    scrape.on('timeout', () => scrape.destroy(new Error('the runtime metrics endpoint did not answer')));
    scrape.on('error', reject);
    scrape.end();
  });
  res.writeHead(upstream.statusCode ?? 502, {
    'content-type': upstream.headers['content-type'] ?? 'text/plain; version=0.0.4',
  });
  upstream.pipe(res);
}

function splitHostPort(bindAddress: string): { host: string; port: number } {
  const separator = bindAddress.lastIndexOf(':');
  return {
    host: bindAddress.slice(0, separator).replace(/^\[|\]$/g, ''),
    port: Number(bindAddress.slice(separator + 1)),
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
