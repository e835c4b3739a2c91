// Which failures a worker waits out and which end it (pure), and the retry loop's contract.
import { describe, expect, it } from 'vitest';
import {
  isTransientPostgresError,
  isTransientTemporalError,
  retryUntilAvailable,
  type DependencyWaitReport,
} from '../src/dependencyRetry';

const withCode = (code: string | number, message = 'x') => Object.assign(new Error(message), { code });

describe('isTransientPostgresError', () => {
  it.each(['ECONNREFUSED', 'ENOTFOUND', '57P03', '08006', '53300'])('waits on %s', (code) => {
    expect(isTransientPostgresError(withCode(code))).toBe(true);
  });
  it.each(['28P01', '3D000', '42P01'])('gives up on %s (configuration or SQL)', (code) => {
    expect(isTransientPostgresError(withCode(code))).toBe(false);
  });
  it('waits on a connection that went away, and on happy-eyeballs refusals', () => {
    expect(isTransientPostgresError(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(
      isTransientPostgresError(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])),
    ).toBe(true);
  });
});

describe('isTransientTemporalError', () => {
  const grpc = (code: number) => Object.assign(new Error('grpc'), { code, details: 'd', metadata: {} });
  it('waits on UNAVAILABLE and DEADLINE_EXCEEDED, not on UNAUTHENTICATED or NOT_FOUND', () => {
    expect(isTransientTemporalError(grpc(14))).toBe(true);
    expect(isTransientTemporalError(grpc(4))).toBe(true);
    expect(isTransientTemporalError(grpc(16))).toBe(false);
    expect(isTransientTemporalError(grpc(5))).toBe(false);
  });
  it('waits on a transport error of a server that does not listen, not on a certificate problem', () => {
    const transport = (message: string) => Object.assign(new Error(message), { name: 'TransportError' });
    expect(isTransientTemporalError(transport('tcp connect error: Connection refused'))).toBe(true);
    expect(isTransientTemporalError(transport('invalid peer certificate: UnknownIssuer'))).toBe(false);
  });
});

describe('retryUntilAvailable', () => {
  it('retries transient failures with growing delays, reports each, and returns the value', async () => {
    const reports: DependencyWaitReport[] = [];
    let calls = 0;
    const value = await retryUntilAvailable(
      'Postgres',
      async () => {
        calls += 1;
        if (calls < 3) throw withCode('ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432');
        return 'migrated';
      },
      isTransientPostgresError,
      { stop: new AbortController().signal, onWaiting: (report) => reports.push(report) },
    );
    expect(value).toBe('migrated');
    expect(reports.map((report) => [report.attempt, report.nextTryInMs])).toEqual([
      [1, 250],
      [2, 500],
    ]);
    expect(reports[0]!.reason).toContain('ECONNREFUSED');
  });

  it('throws anything else at once', async () => {
    const wrongPassword = withCode('28P01', 'password authentication failed');
    await expect(
      retryUntilAvailable('Postgres', () => Promise.reject(wrongPassword), isTransientPostgresError, {
        stop: new AbortController().signal,
        onWaiting: () => undefined,
      }),
    ).rejects.toBe(wrongPassword);
  });

  it('returns null when asked to stop while waiting', async () => {
    const stop = new AbortController();
    const waiting = retryUntilAvailable(
      'Temporal',
      () => Promise.reject(Object.assign(new Error('tcp connect error'), { name: 'TransportError' })),
      isTransientTemporalError,
      { stop: stop.signal, onWaiting: () => stop.abort() },
    );
    expect(await waiting).toBeNull();
  });
});
