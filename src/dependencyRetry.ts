// Waiting instead of a crash loop; only configuration errors end the process (docs/production.md, "Waiting
// for Postgres and Temporal").
import { isGrpcServiceError } from '@temporalio/client';
import { DependencyUnreachableError, postgresTarget } from './config/connectionTargets';

/** The first retry comes this soon; each next one twice as late, up to the cap. */
const DEPENDENCY_RETRY_INITIAL_MS = 250;
/** Capped low, so a worker is serving within seconds of its dependency coming back. */
const DEPENDENCY_RETRY_MAX_MS = 5_000;
/** While one cause lasts, it is logged again this often (a new cause is logged at once). */
const REPEAT_LOG_EVERY_MS = 30_000;

export type Dependency = 'Postgres' | 'Temporal';

export interface DependencyWaitReport {
  dependency: Dependency;
  /** No secrets: messages and codes only. */
  reason: string;
  attempt: number;
  nextTryInMs: number;
}

export interface DependencyRetryOptions {
  /** Aborted when the process is asked to stop: the wait ends, and `retryUntilAvailable` returns null. */
  stop: AbortSignal;
  /** Called on every failed try, for readiness; `log` says whether this one is worth a log line. */
  onWaiting(report: DependencyWaitReport, log: boolean): void;
}

/** Retries while `isTransient`; throws anything else at once; null when stopped while waiting. */
export async function retryUntilAvailable<T>(
  dependency: Dependency,
  attempt: () => Promise<T>,
  isTransient: (error: unknown) => boolean,
  options: DependencyRetryOptions,
): Promise<T | null> {
  let lastLogged: { reason: string; at: number } | null = null;
  for (let tries = 1; ; tries++) {
    if (options.stop.aborted) return null;
    try {
      return await attempt();
    } catch (error) {
      if (!isTransient(error)) throw error;
      const nextTryInMs = Math.min(DEPENDENCY_RETRY_MAX_MS, DEPENDENCY_RETRY_INITIAL_MS * 2 ** (tries - 1));
      const reason = describeError(error);
      const now = Date.now();
      const log =
        lastLogged === null || lastLogged.reason !== reason || now - lastLogged.at >= REPEAT_LOG_EVERY_MS;
      if (log) lastLogged = { reason, at: now };
      options.onWaiting({ dependency, reason, attempt: tries, nextTryInMs }, log);
      await sleep(nextTryInMs, options.stop);
    }
  }
}

// What waiting can fix (the SQLSTATEs in docs/production.md); never 28xxx or 3D000.
const TRANSIENT_POSTGRES_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '53300',
  '57P01',
  '57P02',
  '57P03',
]);

export function isTransientPostgresError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && TRANSIENT_POSTGRES_CODES.has(code)) return true;
  if (error instanceof AggregateError)
    return error.errors.length > 0 && error.errors.every(isTransientPostgresError);
  // node-postgres's own words for a connection that went away or never came.
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|timeout expired|connection timeout/i.test(message);
}

// gRPC: the server is not reachable or not answering yet (UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED).
const TRANSIENT_GRPC_CODES = new Set([14, 4, 8]);

export function isTransientTemporalError(error: unknown): boolean {
  if (isGrpcServiceError(error)) return TRANSIENT_GRPC_CODES.has(Number(error.code));
  // A TLS problem is a TransportError too, but waiting does not fix it.
  const name = (error as { name?: unknown } | null)?.name;
  const message = error instanceof Error ? error.message : '';
  if (name === 'TransportError') return !/certificate|tls|handshake|invalid uri|InvalidUri/i.test(message);
  return false;
}

function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | null)?.code;
  const firstLine = message.split('\n')[0]?.slice(0, 300) ?? '';
  return typeof code === 'string' && !firstLine.includes(code) ? `${firstLine} (${code})` : firstLine;
}

function sleep(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** A connection failure names the server and its setting; anything else is message and code. */
export function describePostgresFailure(error: unknown, connectionString: string, setting: string): string {
  if (isTransientPostgresError(error)) {
    return `${new DependencyUnreachableError(postgresTarget(connectionString, setting), error).message}${codeSuffix(error)}`;
  }
  return `${error instanceof Error ? error.message : String(error)}${codeSuffix(error)}`;
}

function codeSuffix(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : '';
  return typeof code === 'string' && !message.includes(code) ? ` (${code})` : '';
}
