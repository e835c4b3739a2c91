// The one HTTP request path every provider adapter uses: one POST per mail through an undici pool with the
// phase interceptor, classified by phase, status and the provider's own table. It never throws for what the
// network or the provider did. An adapter only says what the request looks like and how to read the answer.

import { Pool, type Dispatcher } from 'undici';
import type { SendResult } from '../shared/mailOutcome';
import { classifySendAttempt } from './classifySendAttempt';
import { createSendPhaseState, phaseInterceptor } from './phaseInterceptor';
import { MailClientConfigError } from './providers/adapterSupport';
import type { MailProviderAdapter } from './providers/mailProvider';
import type { MailTransport, OutgoingMail } from './types';

export { MailClientConfigError } from './providers/adapterSupport';

export interface HttpMailTransportOptions {
  adapter: MailProviderAdapter;
  /** Origin plus an optional path prefix, e.g. `https://api.resend.com` or `http://127.0.0.1:4010/api`. */
  baseUrl: string;
  /** TCP plus TLS. Cheap to keep short: a connect failure is always "not sent". */
  connectTimeoutMs: number;
  /** Every firing makes an unknown outcome, so keep it generous. undici fires it up to ~1 s late. */
  headersTimeoutMs: number;
  /** Deadline for the whole call, response body included; must stay under the send activity's timeout. */
  overallTimeoutMs: number;
  connections: number;
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
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.headersTimeoutMs,
  });
  let closing: Promise<void> | null = null;

  async function send(mail: OutgoingMail): Promise<SendResult> {
    // Built before anything is dispatched: an adapter bug surfaces as a thrown error, not as an outcome.
    const request = adapter.buildRequest(mail);
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
        // No external cancellation signal on purpose: a dispatched call is never aborted (DESIGN.md §6),
        // only bounded by this deadline, so its outcome is recorded truthfully.
        signal: AbortSignal.timeout(options.overallTimeoutMs),
        // `idempotent` stays false (the default for POST): undici must never re-dispatch this request.
      });
      const accepted = response.statusCode >= 200 && response.statusCode < 300;
      const body = await readSmallBody(
        response.body,
        accepted ? MAX_ACCEPTED_BODY_BYTES : MAX_ERROR_BODY_BYTES,
      );
      if (accepted) providerMessageId = adapter.readMessageId(response.headers, body);
      else providerError = adapter.readProviderError(response.statusCode, body);
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

  return { send, close };
}

/** Reads up to `limit` bytes; a longer body is dropped (the socket released) and read as null. */
async function readSmallBody(body: Dispatcher.ResponseData['body'], limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
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
