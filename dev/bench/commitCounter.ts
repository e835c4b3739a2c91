// Transactions committed in some databases of a Postgres server (pg_stat_database.xact_commit), read at the
// start and end of a phase: how many database writes and reads one order costs, our statements (each runs in
// a transaction of its own) and the Temporal server's persistence on the stack. Read through the server's
// `postgres` database, so that reading does not count itself. Postgres publishes these counters from each
// backend at most about once a second, so a phase's figure is good to a second's worth of commits.
import { Client } from 'pg';

export class CommitCounter {
  constructor(
    /** A URL of the server (any database: the query names the databases). */
    private readonly serverUrl: string,
    private readonly databases: string[],
  ) {}

  async read(): Promise<number | null> {
    const url = new URL(this.serverUrl);
    url.pathname = '/postgres';
    const client = new Client({
      connectionString: url.toString(),
      application_name: 'bench commit counter',
      connectionTimeoutMillis: 5_000,
      query_timeout: 5_000,
    });
    try {
      await client.connect();
      const { rows } = await client.query<{ commits: string | null }>(
        `SELECT sum(xact_commit)::text AS commits FROM pg_stat_database WHERE datname = ANY($1::text[])`,
        [this.databases],
      );
      return rows[0]?.commits === null || rows[0]?.commits === undefined ? null : Number(rows[0].commits);
    } catch {
      return null;
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
