// One HTTP send's observations into a SendResult, by docs/design.md §5: a status decides by the table; without
// one, the phase decides. Pure.
import type { SendResult } from '../shared/mailOutcome';
import { GENERIC_STATUS_TABLE, outcomeForStatus, type SendOutcomeTable } from './sendOutcomeTable';

export interface SendAttempt {
  /** The head was about to be written on a connected socket. */
  started: boolean;
  /** The request was already aborted when the start callback returned, so undici wrote nothing. */
  abortedAtStart: boolean;
  status: number | null;
  retryAfterHeader: string | null;
  error: unknown;
  providerMessageId: string | null;
  /** A documented error name read from a non-2xx body, never free text. */
  providerError?: string | null;
}

/** Longer waits asked for are capped: the workflow's backoff takes over. */
export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;

export function classifySendAttempt(
  attempt: SendAttempt,
  table: SendOutcomeTable = GENERIC_STATUS_TABLE,
  nowMs: number = Date.now(),
): SendResult {
  const errorCode = errorCodeOf(attempt.error);

  // A final status wins: once the provider answered, a later body-read error changes nothing.
  if (attempt.status !== null) {
    const status = attempt.status;
    const providerError = attempt.providerError ?? null;
    const outcome = outcomeForStatus(status, table, providerError);
    const named = providerError === null ? '' : ` (${providerError})`;
    const reason = `HTTP ${status} from ${table.label}${named}: ${meaningOf(status, outcome)}`;
    switch (outcome) {
      case 'accepted':
        return { outcome, httpStatus: status, providerMessageId: attempt.providerMessageId };
      case 'not_sent':
        return {
          outcome,
          httpStatus: status,
          errorCode: providerError,
          reason,
          retryAfterMs: parseRetryAfter(attempt.retryAfterHeader, nowMs),
        };
      case 'rejected':
      case 'unknown':
        return { outcome, httpStatus: status, errorCode: providerError, reason };
    }
  }

  const what = describeError(errorCode, attempt.error);
  // No byte of this request reached the wire, whatever the error code says.
  if (!attempt.started || attempt.abortedAtStart) {
    return {
      outcome: 'not_sent',
      httpStatus: null,
      errorCode,
      reason: `${what} before the request started${codeSuffix(errorCode)}`,
      retryAfterMs: null,
    };
  }

  // The request may be on the wire or already processed: ECONNRESET and friends look the same either way.
  return {
    outcome: 'unknown',
    httpStatus: null,
    errorCode,
    reason: `${what} after the request started, with no final HTTP status${codeSuffix(errorCode)}; the provider may have accepted it`,
  };
}

const STATUS_MEANING: Record<SendResult['outcome'], string> = {
  accepted: 'accepted',
  rejected: 'request rejected',
  not_sent: 'not accepted for now (transient)',
  unknown: 'the provider may have processed the request',
};

// An operator reading a failed workflow should see at once that the fix is in the configuration.
const AUTH_MEANING: Readonly<Partial<Record<number, string>>> = {
  401: 'request rejected: authentication failed, the provider refused the API key (check MAIL_API_KEY)',
  403: 'request rejected: forbidden, the provider refused this API key or sender (check MAIL_API_KEY and the verified sender domain)',
};

function meaningOf(status: number, outcome: SendResult['outcome']): string {
  return (outcome === 'rejected' ? AUTH_MEANING[status] : undefined) ?? STATUS_MEANING[outcome];
}

/** Retry-After (RFC 9110 §10.2.3) in ms from `nowMs`, clamped to [0, RETRY_AFTER_CAP_MS]; null if unreadable. */
export function parseRetryAfter(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  const value = header.trim();
  if (/^[0-9]+$/.test(value)) return Math.min(Number(value) * 1000, RETRY_AFTER_CAP_MS);
  // Every HTTP-date form (IMF-fixdate, RFC 850, asctime) starts with a day name. Requiring it keeps
  // Date.parse's lenient guesses ("1.5" parses as a date in 2001) out.
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)/i.test(value)) return null;
  // asctime carries no zone but means GMT; Date.parse would read it as local time.
  const at = Date.parse(/(GMT|UTC)$/i.test(value) ? value : `${value} GMT`);
  if (!Number.isFinite(at)) return null;
  return Math.min(Math.max(at - nowMs, 0), RETRY_AFTER_CAP_MS);
}

/** A string `code`, else a DOMException's `name`; anything else is dropped, so no message text leaks. */
export function errorCodeOf(error: unknown): string | null {
  if (typeof error !== 'object' || error === null) return null;
  const { code, name } = error as { code?: unknown; name?: unknown };
  if (typeof code === 'string' && SAFE_CODE.test(code)) return code;
  if (name === 'TimeoutError' || name === 'AbortError') return name;
  return null;
}

const SAFE_CODE = /^[A-Za-z0-9_.-]{1,64}$/;

const codeSuffix = (code: string | null): string => (code === null ? '' : ` (${code})`);

// Fixed phrases, never the error's message: messages carry addresses, ports and sometimes URLs.
const ERROR_PHRASES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed for now',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network down',
  ETIMEDOUT: 'network operation timed out',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection broken while writing',
  EPROTO: 'TLS protocol error',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no response headers in time',
  UND_ERR_BODY_TIMEOUT: 'response body stalled',
  UND_ERR_SOCKET: 'connection closed by the other side',
  UND_ERR_ABORTED: 'request aborted',
  UND_ERR_CLOSED: 'mail client closed',
  UND_ERR_DESTROYED: 'mail client destroyed',
  UND_ERR_INVALID_ARG: 'invalid request options',
  UND_ERR_NOT_SUPPORTED: 'unsupported request options',
  UND_ERR_REQ_CONTENT_LENGTH_MISMATCH: 'request content length mismatch',
  UND_ERR_HEADERS_OVERFLOW: 'response headers too large',
  UND_ERR_INFO: 'connection ended',
  TimeoutError: 'overall send deadline passed',
  AbortError: 'send aborted',
};

function describeError(code: string | null, error: unknown): string {
  if (code !== null) {
    const known = ERROR_PHRASES[code];
    if (known !== undefined) return known;
    if (code.startsWith('HPE_')) return 'malformed response';
    if (/^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_)/.test(code) || code.includes('SELF_SIGNED_CERT')) {
      return 'TLS handshake failed';
    }
    return 'transport error';
  }
  return error === null || error === undefined ? 'no response' : 'transport error';
}
