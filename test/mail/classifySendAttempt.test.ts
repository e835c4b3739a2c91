// Table test of the pure classifier against docs/design.md §5's outcome table: every error class and status
// that undici's request() can give, before and after the request started.

import { errors } from 'undici';
import { describe, expect, it } from 'vitest';
import {
  classifySendAttempt,
  errorCodeOf,
  parseRetryAfter,
  RETRY_AFTER_CAP_MS,
  type SendAttempt,
} from '../../src/mail/classifySendAttempt';
import { extendStatusTable, GENERIC_STATUS_TABLE, outcomeForStatus } from '../../src/mail/sendOutcomeTable';
import type { MailOutcome } from '../../src/shared/mailOutcome';

const NOW = Date.parse('2025-01-15T12:00:00Z');

function attempt(overrides: Partial<SendAttempt>): SendAttempt {
  return {
    started: true,
    abortedAtStart: false,
    status: null,
    retryAfterHeader: null,
    error: null,
    providerMessageId: null,
    ...overrides,
  };
}

/** A Node system error as net/dns produce it: the message carries the address, the code is what counts. */
function systemError(code: string, message = `connect ${code} 10.1.2.3:443`): Error {
  return Object.assign(new Error(message), { code });
}

function timeoutDomException(): DOMException {
  return new DOMException('The operation was aborted due to timeout', 'TimeoutError');
}

function abortDomException(): DOMException {
  return new DOMException('This operation was aborted', 'AbortError');
}

describe('final status classes (docs/design.md §5, docs/providers.md "Outcome tables")', () => {
  const rows: Array<[number, MailOutcome]> = [
    [200, 'accepted'],
    [201, 'accepted'],
    [202, 'accepted'],
    [204, 'accepted'],
    [301, 'rejected'],
    [302, 'rejected'],
    [307, 'rejected'],
    [308, 'rejected'],
    [400, 'rejected'],
    [401, 'rejected'],
    [403, 'rejected'],
    [404, 'rejected'],
    [405, 'rejected'],
    [409, 'rejected'],
    [413, 'rejected'],
    [415, 'rejected'],
    [422, 'rejected'],
    [418, 'rejected'],
    [451, 'rejected'],
    [408, 'not_sent'],
    [429, 'not_sent'],
    [503, 'not_sent'],
    [501, 'rejected'],
    [500, 'unknown'],
    [502, 'unknown'],
    [504, 'unknown'],
    [507, 'unknown'],
    [520, 'unknown'],
    [524, 'unknown'],
  ];

  it.each(rows)('HTTP %i is %s', (status, expected) => {
    const result = classifySendAttempt(attempt({ status }), GENERIC_STATUS_TABLE, NOW);
    expect(result.outcome).toBe(expected);
    expect(result.httpStatus).toBe(status);
    if (result.outcome !== 'accepted') {
      expect(result.errorCode).toBeNull();
      expect(result.reason).toMatch(new RegExp(`^HTTP ${status} from the mail API: `));
    }
  });

  it('gives a short reason for a rejection', () => {
    expect(classifySendAttempt(attempt({ status: 422 }))).toEqual({
      outcome: 'rejected',
      httpStatus: 422,
      errorCode: null,
      reason: 'HTTP 422 from the mail API: request rejected',
    });
  });

  it('keeps the provider message id of a 2xx', () => {
    expect(classifySendAttempt(attempt({ status: 202, providerMessageId: 'msg_1' }))).toEqual({
      outcome: 'accepted',
      httpStatus: 202,
      providerMessageId: 'msg_1',
    });
  });

  it('a body error after a 2xx does not undo the acceptance', () => {
    const bodyErrors = [
      new errors.SocketError('other side closed'),
      new errors.BodyTimeoutError(),
      new errors.ResponseContentLengthMismatchError(),
      timeoutDomException(),
    ];
    for (const error of bodyErrors) {
      expect(classifySendAttempt(attempt({ status: 200, error }))).toEqual({
        outcome: 'accepted',
        httpStatus: 200,
        providerMessageId: null,
      });
    }
  });

  it('a body error after a 500 leaves it unknown, and after a 422 rejected: the status decides', () => {
    const error = new errors.BodyTimeoutError();
    expect(classifySendAttempt(attempt({ status: 500, error })).outcome).toBe('unknown');
    expect(classifySendAttempt(attempt({ status: 422, error })).outcome).toBe('rejected');
  });

  it('a status we cannot read (outside 100-599) is unknown', () => {
    expect(outcomeForStatus(600)).toBe('unknown');
    expect(outcomeForStatus(99)).toBe('unknown');
  });

  it('a 1xx taken as final is unknown', () => {
    expect(outcomeForStatus(100)).toBe('unknown');
    expect(outcomeForStatus(103)).toBe('unknown');
  });

  it('a provider table can move 503 to unknown without touching the generic one', () => {
    const table = extendStatusTable(GENERIC_STATUS_TABLE, 'provider-with-unsafe-503', { 503: 'unknown' });
    expect(classifySendAttempt(attempt({ status: 503 }), table).outcome).toBe('unknown');
    expect(classifySendAttempt(attempt({ status: 429 }), table).outcome).toBe('not_sent');
    expect(classifySendAttempt(attempt({ status: 503 })).outcome).toBe('not_sent');
  });
});

describe('Retry-After on a transient refusal', () => {
  it('reads delta-seconds', () => {
    const result = classifySendAttempt(
      attempt({ status: 429, retryAfterHeader: '120' }),
      GENERIC_STATUS_TABLE,
      NOW,
    );
    expect(result).toMatchObject({ outcome: 'not_sent', httpStatus: 429, retryAfterMs: 120_000 });
  });

  it('reads an HTTP-date relative to now', () => {
    const header = new Date(NOW + 30_000).toUTCString();
    const result = classifySendAttempt(
      attempt({ status: 503, retryAfterHeader: header }),
      GENERIC_STATUS_TABLE,
      NOW,
    );
    expect(result).toMatchObject({ outcome: 'not_sent', retryAfterMs: 30_000 });
  });

  it('reads the obsolete HTTP-date forms', () => {
    expect(parseRetryAfter('Wednesday, 15-Jan-25 12:01:00 GMT', NOW)).toBe(60_000);
    // asctime has no zone but means GMT, whatever the machine's time zone.
    expect(parseRetryAfter('Wed Jan 15 12:01:00 2025', NOW)).toBe(60_000);
  });

  it('gives no Retry-After when there is none', () => {
    expect(classifySendAttempt(attempt({ status: 503 }))).toMatchObject({ retryAfterMs: null });
  });

  it.each([
    ['a date in the past', 'Wed, 15 Jan 2025 11:00:00 GMT', 0],
    ['a huge delay', '99999999', RETRY_AFTER_CAP_MS],
    ['a far date', 'Fri, 15 Jan 2100 12:00:00 GMT', RETRY_AFTER_CAP_MS],
    ['garbage', 'soon', null],
    ['a fraction', '1.5', null],
    ['a negative number', '-5', null],
    ['an empty header', '', null],
  ])('handles %s', (_label, header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
  });

  it('is ignored on outcomes other than not_sent', () => {
    const result = classifySendAttempt(attempt({ status: 500, retryAfterHeader: '5' }));
    expect(result).not.toHaveProperty('retryAfterMs');
  });
});

describe('no status, request never started: not_sent whatever the code', () => {
  const aggregate = Object.assign(
    new AggregateError([systemError('ECONNREFUSED'), systemError('ETIMEDOUT')], 'connect failed'),
    { code: 'ECONNREFUSED' },
  );
  const rows: Array<[string, unknown, string | null]> = [
    ['refused', systemError('ECONNREFUSED'), 'ECONNREFUSED'],
    ['happy-eyeballs AggregateError', aggregate, 'ECONNREFUSED'],
    ['DNS not found', systemError('ENOTFOUND', 'getaddrinfo ENOTFOUND mail.example.invalid'), 'ENOTFOUND'],
    ['DNS temporary failure', systemError('EAI_AGAIN'), 'EAI_AGAIN'],
    ['connect timeout', new errors.ConnectTimeoutError(), 'UND_ERR_CONNECT_TIMEOUT'],
    ['TLS alt name', systemError('ERR_TLS_CERT_ALTNAME_INVALID'), 'ERR_TLS_CERT_ALTNAME_INVALID'],
    ['TLS expired', systemError('CERT_HAS_EXPIRED'), 'CERT_HAS_EXPIRED'],
    ['TLS self-signed', systemError('DEPTH_ZERO_SELF_SIGNED_CERT'), 'DEPTH_ZERO_SELF_SIGNED_CERT'],
    ['TLS to plain http', systemError('ERR_SSL_WRONG_VERSION_NUMBER'), 'ERR_SSL_WRONG_VERSION_NUMBER'],
    [
      'reset during TLS handshake',
      systemError(
        'ECONNRESET',
        'Client network socket disconnected before secure TLS connection was established',
      ),
      'ECONNRESET',
    ],
    ['host unreachable', systemError('EHOSTUNREACH'), 'EHOSTUNREACH'],
    ['network unreachable', systemError('ENETUNREACH'), 'ENETUNREACH'],
    ['connect ETIMEDOUT', systemError('ETIMEDOUT'), 'ETIMEDOUT'],
    ['invalid argument', new errors.InvalidArgumentError('invalid header'), 'UND_ERR_INVALID_ARG'],
    [
      'content length mismatch',
      new errors.RequestContentLengthMismatchError(),
      'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
    ],
    ['closed dispatcher', new errors.ClientClosedError(), 'UND_ERR_CLOSED'],
    ['destroyed dispatcher', new errors.ClientDestroyedError(), 'UND_ERR_DESTROYED'],
    ['deadline while queued', timeoutDomException(), 'TimeoutError'],
    ['abort while queued', abortDomException(), 'AbortError'],
    ['undici abort while queued', new errors.RequestAbortedError(), 'UND_ERR_ABORTED'],
    ['no error at all', null, null],
  ];

  it.each(rows)('%s', (_label, error, code) => {
    const result = classifySendAttempt(attempt({ started: false, error }));
    expect(result).toMatchObject({
      outcome: 'not_sent',
      httpStatus: null,
      errorCode: code,
      retryAfterMs: null,
    });
    if (result.outcome === 'not_sent') expect(result.reason).toContain('before the request started');
  });

  it('says what happened in a short sentence', () => {
    expect(classifySendAttempt(attempt({ started: false, error: systemError('ECONNREFUSED') }))).toEqual({
      outcome: 'not_sent',
      httpStatus: null,
      errorCode: 'ECONNREFUSED',
      reason: 'connection refused before the request started (ECONNREFUSED)',
      retryAfterMs: null,
    });
  });
});

describe('started, but aborted inside the start callback: nothing was written, so not_sent', () => {
  it.each([
    ['AbortSignal.abort()', abortDomException()],
    ['a deadline that had already passed', timeoutDomException()],
    ['undici abort', new errors.RequestAbortedError()],
  ])('%s', (_label, error) => {
    const result = classifySendAttempt(attempt({ started: true, abortedAtStart: true, error }));
    expect(result.outcome).toBe('not_sent');
  });
});

describe('started, no final status: unknown whatever the code', () => {
  const rows: Array<[string, unknown, string | null]> = [
    ['other side closed', new errors.SocketError('other side closed'), 'UND_ERR_SOCKET'],
    ['read ECONNRESET', systemError('ECONNRESET', 'read ECONNRESET'), 'ECONNRESET'],
    ['write EPIPE', systemError('EPIPE', 'write EPIPE'), 'EPIPE'],
    ['headers timeout', new errors.HeadersTimeoutError(), 'UND_ERR_HEADERS_TIMEOUT'],
    ['overall deadline', timeoutDomException(), 'TimeoutError'],
    ['abort', abortDomException(), 'AbortError'],
    ['undici abort', new errors.RequestAbortedError(), 'UND_ERR_ABORTED'],
    ['malformed response', systemError('HPE_INVALID_CONSTANT', 'Expected HTTP/'), 'HPE_INVALID_CONSTANT'],
    ['headers overflow', new errors.HeadersOverflowError(), 'UND_ERR_HEADERS_OVERFLOW'],
    ['informational close', new errors.InformationalError('reset'), 'UND_ERR_INFO'],
    ['client destroyed mid-flight', new errors.ClientDestroyedError(), 'UND_ERR_DESTROYED'],
    ['client closed mid-flight', new errors.ClientClosedError(), 'UND_ERR_CLOSED'],
    ['ETIMEDOUT after start', systemError('ETIMEDOUT', 'read ETIMEDOUT'), 'ETIMEDOUT'],
    ['EHOSTUNREACH after start', systemError('EHOSTUNREACH'), 'EHOSTUNREACH'],
    ['an error without a code', new Error('something odd'), null],
    ['1xx then nothing', null, null],
  ];

  it.each(rows)('%s', (_label, error, code) => {
    const result = classifySendAttempt(attempt({ started: true, error }));
    expect(result).toMatchObject({ outcome: 'unknown', httpStatus: null, errorCode: code });
    if (result.outcome === 'unknown') expect(result.reason).toContain('after the request started');
  });
});

describe('what a result may carry', () => {
  it('never copies the error message (addresses, URLs, credentials) into the reason', () => {
    const error = systemError(
      'ECONNRESET',
      'read ECONNRESET https://user:hunter2@10.9.8.7/v1/messages to=alice@example.com',
    );
    for (const started of [false, true]) {
      const text = JSON.stringify(classifySendAttempt(attempt({ started, error })));
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('10.9.8.7');
      expect(text).not.toContain('alice@example.com');
    }
  });

  it('takes the code only when it looks like a code', () => {
    expect(errorCodeOf(systemError('ECONNREFUSED'))).toBe('ECONNREFUSED');
    expect(errorCodeOf(Object.assign(new Error('x'), { code: 'has spaces and: a secret' }))).toBeNull();
    expect(errorCodeOf(Object.assign(new Error('x'), { code: 42 }))).toBeNull();
    expect(errorCodeOf(timeoutDomException())).toBe('TimeoutError');
    expect(errorCodeOf('a string')).toBeNull();
    expect(errorCodeOf(undefined)).toBeNull();
  });
});
