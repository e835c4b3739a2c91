// Fetching SNS signing certificates (src/webhooks/snsCertificates.ts) over real loopback HTTP: one fetch in
// flight per URL and four in all, a success kept, a failure remembered for a while (so unsigned posts cannot
// make the receiver fetch again and again), one deadline for the whole fetch (a server that trickles its body
// cannot hold it), and the certificate's validity judged at every use with the caller's clock, not only when
// it was fetched.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCertificate } from '../../packages/sandbox/src/testCertificate';
import { SnsCertificates } from '../../src/webhooks/snsWebhook';

const HOUR_MS = 3_600_000;
const certificate = makeTestCertificate('sns.certificates.test', HOUR_MS);
const hits = new Map<string, number>();
let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    if (path.startsWith('/ok')) {
      // Slow enough that concurrent uses overlap the one fetch.
      setTimeout(() => res.writeHead(200).end(certificate.pem), path.startsWith('/ok-slow') ? 400 : 100);
    } else if (path.startsWith('/trickle')) {
      // A byte every 200 ms for 12 s: each read is quick, the whole never ends in time.
      res.writeHead(200);
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || sent >= 60) {
          clearInterval(timer);
          res.end();
          return;
        }
        sent += 1;
        res.write('-');
      }, 200);
      res.on('close', () => clearInterval(timer));
    } else {
      res.writeHead(404).end('no');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('SNS signing certificates', () => {
  it('concurrent uses share one fetch, and the certificate is kept', async () => {
    const certificates = new SnsCertificates();
    const url = `${origin}/ok-shared.pem`;
    const now = new Date();
    const keys = await Promise.all(Array.from({ length: 8 }, () => certificates.publicKey(url, now)));
    await certificates.publicKey(url, now);
    expect(keys.every((key) => key.equals(keys[0]!))).toBe(true);
    expect(hits.get('/ok-shared.pem')).toBe(1);
  });

  it('a failed fetch is remembered: the URL is not fetched again until the failure has aged', async () => {
    const certificates = new SnsCertificates();
    const url = `${origin}/missing.pem`;
    const now = new Date();
    for (let i = 0; i < 5; i += 1) {
      await expect(certificates.publicKey(url, now)).rejects.toThrow();
    }
    expect(hits.get('/missing.pem')).toBe(1);
    // Ten minutes on, it is asked again (SNS serves a certificate once more, or a typo in it is fixed).
    await expect(certificates.publicKey(url, new Date(now.getTime() + 600_000))).rejects.toThrow();
    expect(hits.get('/missing.pem')).toBe(2);
  });

  it('one deadline holds the whole fetch: a body trickled byte by byte is cut off', async () => {
    const certificates = new SnsCertificates();
    const started = Date.now();
    await expect(certificates.publicKey(`${origin}/trickle.pem`, new Date())).rejects.toThrow();
    // The default deadline is 5 s for connect, headers and body together; the trickle would last 12 s.
    expect(Date.now() - started).toBeLessThan(6_500);
  }, 20_000);

  it('at most four fetches are in flight: a fifth URL meanwhile is refused as busy, unfetched, and fetched later', async () => {
    const certificates = new SnsCertificates();
    const now = new Date();
    const four = [1, 2, 3, 4].map((n) => certificates.publicKey(`${origin}/ok-slow-${n}.pem`, now));
    await expect(certificates.publicKey(`${origin}/ok-slow-5.pem`, now)).rejects.toThrow(/busy/);
    await Promise.all(four);
    expect(hits.get('/ok-slow-5.pem')).toBeUndefined();
    // Busy is not a failure of the URL: once a fetch is free, it is fetched.
    await certificates.publicKey(`${origin}/ok-slow-5.pem`, now);
    expect(hits.get('/ok-slow-5.pem')).toBe(1);
  });

  it("the certificate's validity is judged at every use, not only at the fetch", async () => {
    const certificates = new SnsCertificates();
    const url = `${origin}/ok-expiring.pem`;
    const now = new Date();
    await certificates.publicKey(url, now);
    await expect(certificates.publicKey(url, new Date(now.getTime() + 2 * HOUR_MS))).rejects.toThrow(
      /not valid/,
    );
    // And before it was valid.
    await expect(certificates.publicKey(url, new Date(now.getTime() - 2 * HOUR_MS))).rejects.toThrow(
      /not valid/,
    );
    expect(hits.get('/ok-expiring.pem')).toBe(1);
  });
});
