// Brings up what the benchmark runs against: Postgres (embedded, unless DATABASE_URL), a Temporal dev server
// (unless TEMPORAL_ADDRESS), and the mail sandbox as its own process in pass-through mode (no faults). Every
// variant uses the same ones, in the same run.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { migrate } from '../../src/db/migrate';
import { createDatabase, type Database } from '../../src/db/pool';
import { startTemporalDevServer } from '../devtools/devServer';
import { startEmbeddedPostgres } from '../devtools/embeddedPostgres';
import { getFreePort } from '../../src/shared/freePort';
import { devServerSearchAttributes } from '../devtools/searchAttributes';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributes';
import { createIsolatedDatabase } from '../devtools/testDatabases';
import { spawnTsProcess, type LoggedProcess } from './childProcess';
import { findProcess } from './procStats';

export const SANDBOX_API_KEY = 'bench-key';

export interface BenchEnvironment {
  databaseUrl: string;
  /** The harness's own pool on the bench database (order inserts, verification; never in a measured path). */
  db: Database;
  temporalAddress: string;
  namespace: string;
  sandboxUrl: string;
  /** Where worker and sandbox logs go. */
  logDirectory: string;
  /** Process ids to measure; null for servers this run did not start (given by DATABASE_URL etc.). */
  pids: { temporalServer: number | null; postgres: number | null; sandbox: number };
  describe: { postgres: string; temporal: string };
  close(): Promise<void>;
}

export async function startBenchEnvironment(options: {
  devServerDbFile: string | null;
}): Promise<BenchEnvironment> {
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    const logDirectory = mkdtempSync(path.join(tmpdir(), 'order-mail-bench-'));
    const env = process.env;

    // Postgres.
    let adminUrl = env.DATABASE_URL ?? '';
    let postgresPid: number | null = null;
    let postgresDescription = `DATABASE_URL (${new URL(adminUrl || 'postgres://x/').host})`;
    if (adminUrl === '') {
      const postgres = await startEmbeddedPostgres();
      closers.push(() => postgres.stop());
      adminUrl = postgres.connectionString;
      postgresPid = findProcess(['-p', new URL(adminUrl).port, '-D']);
      postgresDescription = 'embedded PostgreSQL 17 (fsync=off), same machine';
    }
    const isolated = await createIsolatedDatabase(adminUrl, 'order_mail_bench');
    closers.push(() => isolated.drop());
    await migrate(isolated.connectionString);
    const db = createDatabase({
      connectionString: isolated.connectionString,
      applicationName: 'order-mail-bench harness',
      maxConnections: 4,
    });
    closers.push(() => db.close());
    // Order ids are workflow ids: start far from 1 so runs against a long-lived server never collide.
    const offset = 1_000_000 + Math.floor(Math.random() * 8_000_000_000) * 1_000;
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [offset]);

    // Temporal.
    let temporalAddress = env.TEMPORAL_ADDRESS ?? '';
    const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
    let temporalPid: number | null = null;
    let temporalDescription = `TEMPORAL_ADDRESS (${temporalAddress})`;
    if (temporalAddress === '') {
      const server = await startTemporalDevServer({
        uiPort: null,
        namespace,
        searchAttributes: devServerSearchAttributes(),
        ...(options.devServerDbFile === null ? {} : { dbFilename: options.devServerDbFile }),
      });
      closers.push(() => server.stop());
      temporalAddress = server.address;
      temporalPid = findProcess(['start-dev', '--port', temporalAddress.split(':')[1] ?? '']);
      temporalDescription =
        options.devServerDbFile === null
          ? 'temporal server start-dev (CLI 1.5.1, server 1.29.1), in-memory SQLite'
          : `temporal server start-dev (CLI 1.5.1, server 1.29.1), SQLite file ${options.devServerDbFile}`;
    } else {
      const connection = await Connection.connect({ address: temporalAddress });
      try {
        await ensureSearchAttributes(connection, namespace);
      } finally {
        await connection.close();
      }
    }

    // The mail sandbox, in its own process so its CPU is neither the harness's nor the workers'.
    const sandboxPort = await getFreePort();
    const sandbox: LoggedProcess = await spawnTsProcess({
      name: 'mail sandbox',
      script: 'dev/cli/sandbox.ts',
      env: { SANDBOX_PORT: String(sandboxPort), SANDBOX_API_KEY, SANDBOX_FAULTS: '' },
      logPath: path.join(logDirectory, 'sandbox.log'),
      readyText: 'Mail sandbox listening on',
      startupTimeoutMs: 60_000,
    });
    closers.push(() => sandbox.stop(5_000));

    return {
      databaseUrl: isolated.connectionString,
      db,
      temporalAddress,
      namespace,
      sandboxUrl: `http://127.0.0.1:${sandboxPort}`,
      logDirectory,
      pids: { temporalServer: temporalPid, postgres: postgresPid, sandbox: sandbox.pid },
      describe: { postgres: postgresDescription, temporal: temporalDescription },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
