// A MailTransport for a plain JSON mail API (the shape the sandbox speaks): one POST per mail, classified
// by phase and status. It never throws for what the network or the provider did.

import { Pool, type Dispatcher } from 'undici';
import type { SendResult } from '../shared/mailOutcome';
import { classifySendAttempt } from './classifySendAttempt';
import { createSendPhaseState, phaseInterceptor } from './phaseInterceptor';
import { GENERIC_STATUS_TABLE, type SendOutcomeTable } from './sendOutcomeTable';
import type { MailTransport, OutgoingMail } from './types';

export interface GenericMailApiClientOptions {
  /** Origin plus an optional path prefix, e.g. `https://mail.example.com` or `http://127.0.0.1:4010/api`. */
  baseUrl: string;
  apiKey: string;
  /** TCP plus TLS. Cheap to keep short: a connect failure is always "not sent". */
  connectTimeoutMs: number;
  /** Every firing makes an unknown outcome, so keep it generous. undici fires it up to ~1 s late. */
  headersTimeoutMs: number;
  /** Deadline for the whole call, response body included; must stay under the send activity's timeout. */
  overallTimeoutMs: number;
  connections: number;
  /** For a provider whose statuses mean something other than the generic table says. */
  statusTable?: SendOutcomeTable;
}

export class MailClientConfigError extends Error {
  override readonly name = 'MailClientConfigError';
  readonly code = 'ERR_MAIL_CLIENT_CONFIG';
}

/** The provider's id is small; a longer 2xx body is not what we expect, and we do not need all of it. */
const MAX_ACCEPTED_BODY_BYTES = 64 * 1024;

export function createGenericMailApiClient(options: GenericMailApiClientOptions): MailTransport {
  const { origin, messagesPath } = parseBaseUrl(options.baseUrl);
  checkOptions(options);
  const statusTable = options.statusTable ?? GENERIC_STATUS_TABLE;

  const pool = new Pool(origin, {
    connections: options.connections,
    // A POST is never pipelined behind another request anyway; 1 keeps keep-alive reuse and nothing more.
    pipelining: 1,
    connect: { timeout: options.connectTimeoutMs },
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.headersTimeoutMs,
  });
  const authorization = `Bearer ${options.apiKey}`;
  let closing: Promise<void> | null = null;

  async function send(mail: OutgoingMail): Promise<SendResult> {
    const state = createSendPhaseState();
    let providerMessageId: string | null = null;
    let error: unknown = null;
    try {
      const response = await pool.compose(phaseInterceptor(state)).request({
        method: 'POST',
        path: messagesPath,
        headers: { authorization, 'content-type': 'application/json' },
        body: JSON.stringify(toRequestBody(mail)),
        // No external cancellation signal on purpose: a dispatched call is never aborted (DESIGN.md §6),
        // only bounded by this deadline, so its outcome is recorded truthfully.
        signal: AbortSignal.timeout(options.overallTimeoutMs),
        // `idempotent` stays false (the default for POST): undici must never re-dispatch this request.
      });
      if (response.statusCode >= 200 && response.statusCode < 300) {
        providerMessageId = readMessageId(await readSmallBody(response.body));
      } else {
        // Never read into the reason (it could echo the message), but always release the socket.
        await response.body.dump();
      }
    } catch (caught) {
      // After a 2xx this is a body error, which the classifier ignores: the provider took the message.
      error = caught;
    }
    return classifySendAttempt({ ...state, error, providerMessageId }, statusTable);
  }

  async function close(): Promise<void> {
    // close() lets calls in flight finish instead of turning them into unknowns.
    closing ??= pool.close();
    return closing;
  }

  return { send, close };
}

function toRequestBody(mail: OutgoingMail): Record<string, unknown> {
  return {
    from: mail.from,
    to: mail.to,
    reply_to: mail.replyTo,
    subject: mail.subject,
    text: mail.text,
    metadata: { order_id: mail.orderId },
  };
}

async function readSmallBody(body: Dispatcher.ResponseData['body']): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ACCEPTED_BODY_BYTES) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function readMessageId(text: string | null): string | null {
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null) {
      const id = (parsed as { id?: unknown }).id;
      if (typeof id === 'string' && id.length > 0) return id;
    }
  } catch {
    // A 2xx whose body is not JSON is still an acceptance; only the id is lost.
  }
  return null;
}

function parseBaseUrl(baseUrl: string): { origin: string; messagesPath: string } {
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
  const prefix = url.pathname.replace(/\/+$/, '');
  return { origin: url.origin, messagesPath: `${prefix}/v1/messages` };
}

function checkOptions(options: GenericMailApiClientOptions): void {
  const problems: string[] = [];
  // Checked here so a bad key is a configuration error at start-up, not a "not sent" on every mail.
  if (options.apiKey.length === 0 || !/^[\x21-\x7e]+$/.test(options.apiKey)) {
    problems.push('apiKey must be non-empty printable ASCII without spaces');
  }
  for (const name of ['connectTimeoutMs', 'headersTimeoutMs', 'overallTimeoutMs', 'connections'] as const) {
    const value = options[name];
    if (!Number.isInteger(value) || value <= 0) problems.push(`${name} must be a positive integer`);
  }
  if (problems.length > 0) {
    throw new MailClientConfigError(`Invalid mail client options: ${problems.join('; ')}.`);
  }
}
