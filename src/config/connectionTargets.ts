// Connection errors name the target and the setting to fix; never a password, user or query string.

/** `Postgres at db.internal:5432/shop (DATABASE_URL)`; `setting` is the variable the URL came from. */
export function postgresTarget(connectionString: string, setting: string): string {
  let where: string;
  try {
    const url = new URL(connectionString);
    where = `${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    where = 'an unparsable URL';
  }
  return `Postgres at ${where} (${setting})`;
}

/** `Temporal at localhost:7233 (TEMPORAL_ADDRESS)`. */
export function temporalTarget(address: string, setting: string): string {
  return `Temporal at ${address} (${setting})`;
}

/** A dependency that did not answer: the target, the setting, and what the driver said. */
export class DependencyUnreachableError extends Error {
  override readonly name = 'DependencyUnreachableError';
  readonly code = 'ERR_DEPENDENCY_UNREACHABLE';
  constructor(
    readonly target: string,
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message.split('\n')[0] : String(cause);
    super(`Cannot reach ${target}: ${reason}`, { cause });
  }
}
