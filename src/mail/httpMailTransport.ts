// The one HTTP request path of every adapter; it never throws for what the network or provider did. Why the
// fence holds a connection slot, not a socket: docs/production.md (undici opens connections lazily).
import { Pool } from 'undici';
import type { SendDestination } from '../evidence/destination';
import { originOf } from '../evidence/destination';
import type { SendResult } from '../shared/mailOutcome';
import { classifySendAttempt } from './classifySendAttempt';
import { readBoundedBody } from './readBoundedBody';
import { createSendPhaseState, phaseInterceptor } from './phaseInterceptor';
import { MailClientConfigError } from './providers/adapterSupport';
import { traceProviderRequest } from '../tracing/mailSpan';
import type { MailProviderAdapter } from './providers/mailProvider';
import {
  noConnectionInTime,
  openGate,
  type DispatchGate,
  type MailTransport,
  type OutgoingMail,
} from './types';

export { MailClientConfigError } from './providers/adapterSupport';

export interface HttpMailTransportOptions {
  adapter: MailProviderAdapter;
  /** Origin plus an optional path prefix, e.g. `https://api.resend.com` or `http://127.0.0.1:4010/api`. */
  baseUrl: string;
  /** TCP plus TLS. Cheap to keep short: a connect failure is always "not sent". */
  connectTimeoutMs: number;
  /** Every firing makes an unknown outcome, so keep it generous. undici fires it up to ~1 s late. */
  headersTimeoutMs: number;
  overallTimeoutMs: number;
  connections: number;
  /** Derived from the adapter and the base URL when absent. */
  destination?: SendDestination;
}

/** The provider's id is small; a longer 2xx body is not what we expect, and we do not need all of it. */
const MAX_ACCEPTED_BODY_BYTES = 64 * 1024;
/** Enough for any documented error object; only its error name is read. */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

export function createHttpMailTransport(options: HttpMailTransportOptions): MailTransport {
  const { origin, pathPrefix } = parseBaseUrl(options.baseUrl);
  checkOptions(options);
  const { adapter } = options;

  const pool = new Pool(origin, {
    connections: options.connections,
    // A POST is never pipelined behind another request anyway; 1 keeps keep-alive reuse and nothing more.
    pipelining: 1,
    // HTTP/1.1 only: HTTP/2 could replay a refused stream (docs/providers.md, "What each adapter sends and reads").
    allowH2: false,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.headersTimeoutMs,
  });
  let closing: Promise<void> | null = null;
  // A send holds a slot before the fence, so undici never queues a request behind another after it.
  const slots = new ConnectionSlots(options.connections);

  async function send(
    mail: OutgoingMail,
    gate: DispatchGate = openGate(options.overallTimeoutMs),
  ): Promise<SendResult> {
    // Built before anything is dispatched: an adapter bug surfaces as a thrown error, not as an outcome.
    const built = adapter.buildRequest(mail);
    let request = built;
    if (adapter.authorize !== undefined) {
      try {
        request = await adapter.authorize(built, { origin, path: `${pathPrefix}${built.path}` });
      } catch (error) {
        // No credentials, no signature, no request: nothing left, and a later attempt may have them.
        return {
          outcome: 'not_sent',
          httpStatus: null,
          errorCode: 'CREDENTIALS_UNAVAILABLE',
          reason: `the request could not be signed (${error instanceof Error ? error.name : 'error'}); nothing was sent`,
          retryAfterMs: null,
        };
      }
    }
    const waitStartedAt = performance.now();
    if (!(await slots.take(gate.passFenceBy))) {
      return noConnectionInTime(
        `HTTP connection (MAIL_CONNECTIONS=${options.connections})`,
        performance.now() - waitStartedAt,
      );
    }
    try {
      // Whatever the fence throws, no request was made.
      await gate.passFence();
      return await traceProviderRequest(
        'mail.http.request',
        { provider: adapter.name, orderId: mail.orderId },
        () => dispatch(request),
      );
    } finally {
      slots.give();
    }
  }

  /** Past the fence: the request, under the overall deadline, which starts now. */
  async function dispatch(request: ReturnType<MailProviderAdapter['buildRequest']>): Promise<SendResult> {
    const state = createSendPhaseState();
    let providerMessageId: string | null = null;
    let providerError: string | null = null;
    let error: unknown = null;
    try {
      const response = await pool.compose(phaseInterceptor(state)).request({
        method: 'POST',
        path: `${pathPrefix}${request.path}`,
        headers: request.headers,
        body: request.body,
        // Never aborted once dispatched (docs/design.md §6), only bounded, so its outcome is true.
        signal: AbortSignal.timeout(options.overallTimeoutMs),
        // `idempotent` stays false (the default for POST): undici must never re-dispatch this request.
      });
      const accepted = response.statusCode >= 200 && response.statusCode < 300;
      const body = await readBoundedBody(
        response.body,
        accepted ? MAX_ACCEPTED_BODY_BYTES : MAX_ERROR_BODY_BYTES,
      );
      if (accepted) providerMessageId = adapter.readMessageId(response.headers, body);
      else providerError = adapter.readProviderError(response.statusCode, body, response.headers);
    } catch (caught) {
      // After a final status this is a body error, which the classifier ignores: the status stands.
      error = caught;
    }
    return classifySendAttempt({ ...state, error, providerMessageId, providerError }, adapter.statusTable);
  }

  async function close(): Promise<void> {
    // close() lets calls in flight finish instead of turning them into unknowns.
    closing ??= pool.close();
    return closing;
  }

  const destination = options.destination ?? {
    provider: adapter.name,
    origin: originOf(options.baseUrl),
    scope: null,
    credentialFingerprint: null,
  };
  return { deadlineAfterFenceMs: options.overallTimeoutMs, destination, send, close };
}

class ConnectionSlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  /** True once a slot is this caller's; false when none freed up before `until`. */
  async take(until: number): Promise<boolean> {
    while (this.free === 0) {
      const waitMs = until - performance.now();
      if (waitMs <= 0) return false;
      const woken = await new Promise<boolean>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          const index = this.waiting.indexOf(wake);
          if (index !== -1) this.waiting.splice(index, 1);
          resolve(false);
        }, waitMs);
        this.waiting.push(wake);
      });
      if (!woken) return false;
    }
    this.free -= 1;
    return true;
  }

  give(): void {
    this.free += 1;
    this.waiting.shift()?.();
  }
}

function parseBaseUrl(baseUrl: string): { origin: string; pathPrefix: string } {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    // The value is not echoed: a malformed URL may still hold credentials.
    throw new MailClientConfigError('Mail API base URL is not a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new MailClientConfigError('Mail API base URL must use http or https.');
  }
  if (url.username !== '' || url.password !== '') {
    throw new MailClientConfigError(
      'Mail API base URL must not contain credentials; pass the API key instead.',
    );
  }
  if (url.search !== '' || url.hash !== '') {
    throw new MailClientConfigError('Mail API base URL must not have a query or a fragment.');
  }
  return { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, '') };
}

function checkOptions(options: HttpMailTransportOptions): void {
  const problems = transportOptionProblems(options);
  if (problems.length > 0) {
    throw new MailClientConfigError(`Invalid mail client options: ${problems.join('; ')}.`);
  }
}

export function transportOptionProblems(
  options: Pick<
    HttpMailTransportOptions,
    'connectTimeoutMs' | 'headersTimeoutMs' | 'overallTimeoutMs' | 'connections'
  >,
): string[] {
  const problems: string[] = [];
  for (const name of ['connectTimeoutMs', 'headersTimeoutMs', 'overallTimeoutMs', 'connections'] as const) {
    const value = options[name];
    if (!Number.isInteger(value) || value <= 0) problems.push(`${name} must be a positive integer`);
  }
  return problems;
}
