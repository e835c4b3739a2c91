// Brings up what the benchmark runs against: our Postgres (embedded, unless DATABASE_URL), the mail sandbox as
// its own process in pass-through mode (no faults), and one or more Temporal servers:
//   dev    `temporal server start-dev` (in memory, unless --dev-server-db), or TEMPORAL_ADDRESS when set;
//   stack  the production topology of `npm run stack` (dev/stack): the Temporal server binary on a Postgres of
//          its own (4 history shards, deploy/stack.env), that Postgres with fsync on, as production runs it.
// Every variant on every server uses the same Postgres and sandbox, in the same run.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { appendFileSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { migrate } from '../../src/db/migrator';
import { createDatabase, type Database } from '../../src/db/pool';
import { setUpDatabaseRoles } from '../../src/db/roles';
import { startTemporalDevServer } from '../devtools/devServer';
import { findTemporalCli } from '../devtools/findTemporalCli';
import { startEmbeddedPostgres } from '../devtools/embeddedPostgres';
import { getFreePort } from '../../src/shared/freePort';
import { devServerSearchAttributes } from '../devtools/searchAttributeFlags';
import { ensureSearchAttributes } from '../../src/temporal/searchAttributeRegistration';
import { createIsolatedDatabase } from '../devtools/testDatabases';
import { startStack } from '../stack/stack';
import { loadStackSettings } from '../stack/stackSettings';
import { spawnTsProcess, type LoggedProcess } from './childProcess';
import { CommitCounter } from './commitCounter';
import type { ServerName } from './options';
import { findProcess } from './procStats';

export const SANDBOX_API_KEY = 'bench-key';

export interface BenchServer {
  name: ServerName;
  address: string;
  namespace: string;
  /** Process ids to measure; null for parts this run did not start (TEMPORAL_ADDRESS). */
  pids: {
    temporalServer: number | null;
    /** The server's own persistence when it is a process apart (the stack's Postgres); null for the dev server. */
    temporalStore: number | null;
  };
  describe: string;
  /** Counts the commits of the server's own persistence (the stack's Postgres); null for the dev server. */
  storeCommits: CommitCounter | null;
}

export interface BenchEnvironment {
  /** What the measured processes connect with: a worker login on the embedded Postgres, else DATABASE_URL's. */
  databaseUrl: string;
  /** A login that may create databases on our Postgres (release-2.0 makes one of its own). */
  adminUrl: string;
  /** Whether the workers run as production's logins (the embedded Postgres) or as DATABASE_URL's login. */
  productionLogins: boolean;
  /** The harness's own pool on the bench database (order inserts, verification; never in a measured path). */
  db: Database;
  servers: BenchServer[];
  sandboxUrl: string;
  /** Where worker, sandbox and server logs go. */
  logDirectory: string;
  /** Our Postgres and the sandbox; null for a Postgres this run did not start (DATABASE_URL). */
  pids: { postgres: number | null; sandbox: number };
  describe: { postgres: string };
  /** Counts the commits of the bench database: our statements, one transaction each. */
  commits: CommitCounter;
  close(): Promise<void>;
}

export async function startBenchEnvironment(options: {
  devServerDbFile: string | null;
  servers: ServerName[];
}): Promise<BenchEnvironment> {
  const closers: (() => Promise<void>)[] = [];
  const close = async (): Promise<void> => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    const logDirectory = mkdtempSync(path.join(tmpdir(), 'order-mail-bench-'));
    const env = process.env;

    // Our Postgres.
    let adminUrl = env.DATABASE_URL ?? '';
    let postgresPid: number | null = null;
    let postgresDescription = `DATABASE_URL (${new URL(adminUrl || 'postgres://x/').host})`;
    const embedded = adminUrl === '';
    if (embedded) {
      const postgres = await startEmbeddedPostgres();
      closers.push(() => postgres.stop());
      adminUrl = postgres.connectionString;
      postgresPid = findProcess(['-p', new URL(adminUrl).port, '-D']);
      postgresDescription =
        'embedded PostgreSQL 17 (fsync=off), same machine; workers log in as a worker login, as in production';
    }
    const isolated = await createIsolatedDatabase(adminUrl, 'order_mail_bench');
    closers.push(() => isolated.drop());
    // On a Postgres of its own, the workers' logins are production's (npm run db:roles); on DATABASE_URL, its
    // login as given.
    let workerUrl = isolated.connectionString;
    if (embedded) workerUrl = await productionLogins(isolated.connectionString);
    else await migrate(isolated.connectionString);
    const db = createDatabase({
      connectionString: isolated.connectionString,
      applicationName: 'order-mail-bench harness',
      maxConnections: 4,
    });
    closers.push(() => db.close());
    // Order ids are workflow ids: start far from 1 so runs against a long-lived server never collide.
    const offset = 1_000_000 + Math.floor(Math.random() * 8_000_000_000) * 1_000;
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [offset]);

    const servers: BenchServer[] = [];
    for (const name of options.servers) {
      const server =
        name === 'dev'
          ? await startDevServer(options.devServerDbFile, closers)
          : await startStackServer(logDirectory, closers);
      servers.push(server);
    }

    // The mail sandbox, in its own process so its CPU is neither the harness's nor the workers'.
    const sandboxPort = await getFreePort();
    const sandbox: LoggedProcess = await spawnTsProcess({
      name: 'mail sandbox',
      script: 'packages/sandbox/src/cli.ts',
      env: { SANDBOX_PORT: String(sandboxPort), SANDBOX_API_KEY, SANDBOX_FAULTS: '' },
      logPath: path.join(logDirectory, 'sandbox.log'),
      readyText: 'Mail sandbox listening on',
      startupTimeoutMs: 60_000,
    });
    closers.push(() => sandbox.stop(5_000));

    return {
      databaseUrl: workerUrl,
      adminUrl,
      productionLogins: embedded,
      db,
      servers,
      sandboxUrl: `http://127.0.0.1:${sandboxPort}`,
      logDirectory,
      pids: { postgres: postgresPid, sandbox: sandbox.pid },
      describe: { postgres: postgresDescription },
      commits: new CommitCounter(adminUrl, [new URL(isolated.connectionString).pathname.slice(1)]),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/**
 * Makes the migration and worker logins `npm run db:roles` makes, migrates as the first, and returns the
 * second's URL. The embedded cluster's superuser (a member of the worker group, dev/devtools/serviceMembership.ts)
 * is what tests run as; order_mail_log's trigger asks a superuser's membership of the catalog once per
 * transaction and keeps it in a sequence (migration 0050), so each statement that writes the row paid that
 * where a production worker login takes the role cache (docs/benchmarks.md, "Where the product's extra CPU goes").
 */
async function productionLogins(adminUrl: string): Promise<string> {
  const loginUrl = (user: string): string => {
    const url = new URL(adminUrl);
    url.username = user;
    url.password = randomBytes(16).toString('hex');
    return url.toString();
  };
  const migrationUrl = loginUrl('order_mail_bench_migrator');
  const workerUrl = loginUrl('order_mail_bench_worker');
  await setUpDatabaseRoles({ adminUrl, migrationUrl, workerUrl });
  await migrate(migrationUrl);
  return workerUrl;
}

// Both servers cache search attributes as production's does. The CLI's dev server and the stack's test config
// read them from the database on every read instead (so a test may search right after registering one): the
// product, which sets and upserts attributes on every order, paid that on each, the floor did not, and no
// deployment does (docs/benchmarks.md, 2026-12-06). The attributes are registered before any worker starts.
const PRODUCTION_SEARCH_ATTRIBUTE_CACHE = { 'system.forceSearchAttributesCacheRefreshOnRead': 'false' };

async function startDevServer(dbFile: string | null, closers: (() => Promise<void>)[]): Promise<BenchServer> {
  const env = process.env;
  const namespace = env.TEMPORAL_NAMESPACE ?? 'default';
  const given = env.TEMPORAL_ADDRESS ?? '';
  if (given !== '') {
    const connection = await Connection.connect({ address: given });
    try {
      await ensureSearchAttributes(connection, namespace);
    } finally {
      await connection.close();
    }
    return {
      name: 'dev',
      address: given,
      namespace,
      pids: { temporalServer: null, temporalStore: null },
      describe: `TEMPORAL_ADDRESS (${given})`,
      storeCommits: null,
    };
  }
  const server = await startTemporalDevServer({
    uiPort: null,
    namespace,
    searchAttributes: devServerSearchAttributes(),
    dynamicConfig: PRODUCTION_SEARCH_ATTRIBUTE_CACHE,
    ...(dbFile === null ? {} : { dbFilename: dbFile }),
  });
  closers.push(() => server.stop());
  return {
    name: 'dev',
    address: server.address,
    namespace,
    pids: {
      temporalServer: findProcess(['start-dev', '--port', server.address.split(':')[1] ?? '']),
      temporalStore: null,
    },
    storeCommits: null,
    describe: `temporal server start-dev (${devServerVersion()}), ${dbFile === null ? 'in-memory SQLite' : `SQLite file ${dbFile}`}`,
  };
}

/** What the CLI says it is (`temporal version 1.9.1 (Server 1.32.0, UI 2.54.1)`): a run's JSON names its server. */
function devServerVersion(): string {
  const cli = findTemporalCli();
  if (cli === null) return "the SDK's downloaded CLI";
  return execFileSync(cli, ['--version'], { encoding: 'utf8', timeout: 10_000 }).trim();
}

async function startStackServer(
  logDirectory: string,
  closers: (() => Promise<void>)[],
): Promise<BenchServer> {
  const settings = loadStackSettings();
  // Temporal's persistence on a Postgres of its own, so its CPU is measured apart from ours; fsync on, as a
  // production database runs (every history write is a durable commit).
  const store = await startEmbeddedPostgres({ fsync: true });
  closers.push(() => store.stop());
  const storePid = findProcess(['-p', new URL(store.connectionString).port, '-D']);
  const directory = mkdtempSync(path.join(tmpdir(), 'order-mail-bench-stack-'));
  const logFile = path.join(logDirectory, 'stack.log');
  const stack = await startStack({
    directory,
    workers: 0,
    uiPort: null,
    postgresUrl: store.connectionString,
    settings,
    productionDynamicConfig: true,
    log: (line) => appendFileSync(logFile, `${line}\n`),
  });
  closers.push(() => stack.stop());
  const serverProcess = stack.processes().find((process) => process.name === 'temporal server');
  return {
    name: 'stack',
    address: stack.temporalAddress,
    namespace: stack.namespace,
    pids: { temporalServer: serverProcess?.pid ?? null, temporalStore: storePid },
    storeCommits: new CommitCounter(store.connectionString, [
      settings.temporalDatabase,
      settings.temporalVisibilityDatabase,
    ]),
    describe:
      `temporal server ${settings.temporalServerVersion} (dev/stack: ${settings.historyShards} history shards), ` +
      'on embedded PostgreSQL 17 of its own with fsync=on, same machine',
  };
}
