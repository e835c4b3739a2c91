import { createHash } from 'node:crypto';
import { Pool, type PoolClient, type QueryResultRow } from 'pg';

/** Distinct texts named per pool; past it, statements go unnamed, so dynamic SQL cannot grow sessions. */
export const PREPARED_STATEMENT_LIMIT = 256;

export interface DatabaseOptions {
  connectionString: string;
  /** Shows up in pg_stat_activity, so a DBA can tell which process holds a connection. */
  applicationName: string;
  maxConnections?: number;
  connectTimeoutMs?: number;
  /** Server-side limit for one statement; a hung statement fails instead of hanging an activity. */
  statementTimeoutMs?: number;
  /**
   * Sends each `query` with values as a named statement, so a connection parses and plans it once
   * (PG_PREPARED_STATEMENTS).
   * `transaction()`'s client stays unnamed: no order's statement runs in one, and a failed statement there
   * keeps its connection, so a named statement gone stale would stay on it.
   */
  preparedStatements?: boolean;
}

/** The one pg pool of a process, with the few operations the rest of the code needs. */
export interface Database {
  query<Row extends QueryResultRow = QueryResultRow>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<{ rows: Row[]; rowCount: number }>;
  transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export function createDatabase(
  options: DatabaseOptions,
  onError: (message: string) => void = logPoolError,
): Database {
  const pool = new Pool({
    connectionString: options.connectionString,
    application_name: options.applicationName,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    statement_timeout: options.statementTimeoutMs ?? 10_000,
    // A client-side deadline too, for when the server or the network stops answering altogether.
    query_timeout: (options.statementTimeoutMs ?? 10_000) + 5_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle client's error (server restart, network drop) would otherwise crash the process. Only the
  // message and code are logged: a pg client object can carry the connection password.
  pool.on('error', (error: Error & { code?: string }) => onError(describeDatabaseError(error)));
  const names = new Map<string, string>();
  const nameOf = (text: string): string | null => {
    const known = names.get(text);
    if (known !== undefined || names.size >= PREPARED_STATEMENT_LIMIT) return known ?? null;
    const name = preparedStatementName(text);
    names.set(text, name);
    return name;
  };

  return {
    async query<Row extends QueryResultRow>(sql: string, params: readonly unknown[] = []) {
      const values = params as unknown[];
      // Parameterised texts only: they go through Parse and Bind anyway, where a text without values goes as a
      // simple query, which may hold several statements. A failed pool.query retires its connection, so a
      // stale named statement fails once per connection.
      const name = options.preparedStatements === true && values.length > 0 ? nameOf(sql) : null;
      const result =
        name === null
          ? await pool.query<Row>(sql, values)
          : await pool.query<Row>({ name, text: sql, values });
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    },
    async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      // A checked-out client has no pool listener: a lost backend would be an unhandled 'error' that ends the
      // process. Caught here, the next statement fails instead and the client is not reused.
      let lost: Error | undefined;
      const onLost = (error: Error): void => {
        lost = error;
        onError(describeDatabaseError(error));
      };
      client.on('error', onLost);
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.removeListener('error', onLost);
        client.release(lost);
      }
    },
    async close() {
      await pool.end();
    },
  };
}

/** One name per text (Postgres keeps 63 bytes of a name), so a connection never reuses one for another text. */
export function preparedStatementName(text: string): string {
  return `ocm_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
}

export function describeDatabaseError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

function logPoolError(message: string): void {
  console.error(JSON.stringify({ level: 'error', component: 'pg-pool', message }));
}
