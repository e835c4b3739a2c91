// The worker's /metrics over real loopback HTTP (issue 22, finding 12): the gauge read from Postgres is
// computed at most once per WORKER_GAUGE_REFRESH_INTERVAL_MS, however many scrapes arrive at once (single
// flight), and the port binds loopback unless an address says otherwise.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/loadConfig';
import { startWorkerHttpServer, type WorkerHttpServer } from '../../src/metrics/workerHttpServer';

let runtime: Server;
let runtimeUrl: string;

beforeAll(async () => {
  // Stands in for the Temporal runtime's own exporter, which /metrics passes through.
  runtime = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('up 1\n'));
  await new Promise<void>((resolve) => runtime.listen(0, '127.0.0.1', resolve));
  runtimeUrl = `http://127.0.0.1:${(runtime.address() as AddressInfo).port}/metrics`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => runtime.close(() => resolve()));
});

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function serverCountingRefreshes(
  intervalMs: number,
): Promise<{ server: WorkerHttpServer; refreshes: () => number }> {
  let refreshes = 0;
  const server = await startWorkerHttpServer({
    bindAddress: '127.0.0.1:0',
    runtimeMetricsUrl: runtimeUrl,
    gaugeRefreshIntervalMs: intervalMs,
    refreshGauges: async () => {
      refreshes += 1;
      // A gauge query that takes a while, as on a large log.
      await new Promise((resolve) => setTimeout(resolve, 200));
    },
    workerState: () => 'running',
    checkDatabase: async () => undefined,
    log: () => undefined,
  });
  return { server, refreshes: () => refreshes };
}

describe('/metrics', () => {
  it('computes the gauge once for many scrapes at once, and not again within the interval', async () => {
    const { server, refreshes } = await serverCountingRefreshes(1_000);
    try {
      const scrapes = await Promise.all(Array.from({ length: 20 }, () => get(`${server.url}/metrics`)));
      expect(scrapes.every((scrape) => scrape.status === 200 && scrape.body === 'up 1\n')).toBe(true);
      expect(refreshes()).toBe(1);
      expect((await get(`${server.url}/metrics`)).status).toBe(200);
      expect(refreshes()).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      await get(`${server.url}/metrics`);
      expect(refreshes()).toBe(2);
    } finally {
      await server.close();
    }
  });

  it('binds loopback when given only a port, and reads the refresh interval', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u:p@localhost/shop',
      MAIL_DEPLOYMENT_ID: 'test-deployment',
      MAIL_API_BASE_URL: 'http://127.0.0.1:4010',
      MAIL_API_KEY: 'sandbox-key',
      WORKER_HTTP_BIND_ADDRESS: '9464',
      WORKER_GAUGE_REFRESH_INTERVAL_MS: '30000',
    });
    expect(config.worker.httpBindAddress).toBe('127.0.0.1:9464');
    expect(config.worker).toMatchObject({ gaugeRefreshIntervalMs: 30_000 });
    expect(
      loadConfig({
        DATABASE_URL: 'postgres://u:p@localhost/shop',
        MAIL_DEPLOYMENT_ID: 'test-deployment',
        MAIL_API_BASE_URL: 'http://127.0.0.1:4010',
        MAIL_API_KEY: 'sandbox-key',
      }).worker,
    ).toMatchObject({ gaugeRefreshIntervalMs: 15_000 });
  });
});
