// SNS signing certificates by URL; anyone can name one, so fetching is bounded: docs/providers.md, SNS delivery.
import { X509Certificate, type KeyObject } from 'node:crypto';
import { request } from 'undici';

export interface SnsCertificateOptions {
  /** Connect, headers and body of one fetch together (default 5 s). */
  fetchTimeoutMs?: number;
  /** How long a failed URL is refused without being fetched again (default 60 s). */
  failureTtlMs?: number;
  /** Certificates kept (default 32) and failures remembered (default 1,024), oldest dropped first. */
  maxEntries?: number;
  maxFailures?: number;
  /** Fetches in flight at once, all URLs together (default 4). */
  maxInFlight?: number;
  /** Tests only: how a certificate's bytes are fetched (default: an HTTPS GET). */
  fetchPem?: (url: string, signal: AbortSignal) => Promise<Buffer>;
}

export class SnsCertificateError extends Error {
  override readonly name = 'SnsCertificateError';
}

/** Every fetch slot is taken: not the URL's failure, so not remembered; the caller asks to be sent again. */
export class SnsCertificatesBusyError extends Error {
  override readonly name = 'SnsCertificatesBusyError';
  constructor() {
    super('signing certificate fetches are busy');
  }
}

const MAX_CERTIFICATE_BYTES = 16_384;

export class SnsCertificates {
  private readonly kept = new Map<string, X509Certificate>();
  private readonly inFlight = new Map<string, Promise<X509Certificate>>();
  /** URL → until when (ms) it is refused without a fetch. */
  private readonly failed = new Map<string, number>();
  private readonly fetchTimeoutMs: number;
  private readonly failureTtlMs: number;
  private readonly maxEntries: number;
  private readonly maxFailures: number;
  private readonly maxInFlight: number;
  private readonly fetchPem: (url: string, signal: AbortSignal) => Promise<Buffer>;

  constructor(options: SnsCertificateOptions = {}) {
    this.fetchTimeoutMs = options.fetchTimeoutMs ?? 5_000;
    this.failureTtlMs = options.failureTtlMs ?? 60_000;
    this.maxEntries = options.maxEntries ?? 32;
    this.maxFailures = options.maxFailures ?? 1_024;
    this.maxInFlight = options.maxInFlight ?? 4;
    this.fetchPem = options.fetchPem ?? fetchPemOverHttps;
  }

  /** The public key of the certificate at `url`, if that certificate is valid at `now`. */
  async publicKey(url: string, now: Date): Promise<KeyObject> {
    const certificate = await this.certificate(url, now);
    const at = now.getTime();
    // Kept even when it is not valid now: SNS signs with a renewed certificate under a new URL, so fetching
    // this one again would only give anyone a way to make us fetch.
    if (at < Date.parse(certificate.validFrom) || at > Date.parse(certificate.validTo)) {
      throw new SnsCertificateError('the signing certificate is not valid now');
    }
    return certificate.publicKey;
  }

  private certificate(url: string, now: Date): Promise<X509Certificate> {
    const kept = this.kept.get(url);
    if (kept !== undefined) return Promise.resolve(kept);
    const until = this.failed.get(url);
    if (until !== undefined) {
      if (now.getTime() < until) {
        return Promise.reject(new SnsCertificateError('the signing certificate failed recently'));
      }
      this.failed.delete(url);
    }
    let pending = this.inFlight.get(url);
    if (pending === undefined) {
      if (this.inFlight.size >= this.maxInFlight) return Promise.reject(new SnsCertificatesBusyError());
      pending = this.fetchWithDeadline(url).then(
        (certificate) => {
          this.inFlight.delete(url);
          if (this.kept.size >= this.maxEntries) this.kept.delete(this.kept.keys().next().value!);
          this.kept.set(url, certificate);
          return certificate;
        },
        (error: unknown) => {
          this.inFlight.delete(url);
          this.rememberFailure(url, now);
          throw error;
        },
      );
      this.inFlight.set(url, pending);
    }
    return pending;
  }

  private rememberFailure(url: string, now: Date): void {
    this.failed.delete(url);
    if (this.failed.size >= this.maxFailures) this.failed.delete(this.failed.keys().next().value!);
    this.failed.set(url, now.getTime() + this.failureTtlMs);
  }

  private async fetchWithDeadline(url: string): Promise<X509Certificate> {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    // Raced as well as passed on: the deadline holds even where a stream does not watch the signal.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new SnsCertificateError('the signing certificate was not fetched in time');
        controller.abort(error);
        reject(error);
      }, this.fetchTimeoutMs);
    });
    try {
      return new X509Certificate(await Promise.race([this.fetchPem(url, controller.signal), deadline]));
    } finally {
      clearTimeout(timer);
    }
  }
}

async function fetchPemOverHttps(url: string, signal: AbortSignal): Promise<Buffer> {
  // undici's request follows no redirect: a certificate must be at the very URL that was checked.
  const response = await request(url, { method: 'GET', signal });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length;
    if (size > MAX_CERTIFICATE_BYTES) {
      response.body.destroy();
      throw new SnsCertificateError('the signing certificate is larger than a certificate');
    }
    chunks.push(chunk as Buffer);
  }
  if (response.statusCode !== 200) {
    throw new SnsCertificateError(`the signing certificate answered HTTP ${response.statusCode}`);
  }
  return Buffer.concat(chunks);
}
