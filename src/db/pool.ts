import { Pool, type PoolClient, type QueryResultRow } from 'pg';

export interface DatabaseOptions {
  connectionString: string;
  /** Shows up in pg_stat_activity, so a DBA can tell which process holds a connection. */
  applicationName: string;
  maxConnections?: number;
  connectTimeoutMs?: number;
  /** Server-side limit for one statement; a hung statement fails instead of hanging an activity. */
  statementTimeoutMs?: number;
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

  return {
    async query<Row extends QueryResultRow>(sql: string, params: readonly unknown[] = []) {
      const result = await pool.query<Row>(sql, params as unknown[]);
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
