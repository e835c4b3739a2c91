// The release-2.0 variant's own world: 2.0.0's source in a cache directory (.tmp/bench-release/), its
// dependencies, and a database of its own in the bench's Postgres, made by 2.0's own `db:roles` and
// `db:migrate`. 2.0's worker refuses main's newer schema at start, so it cannot share the product's database;
// it shares everything else (Postgres server, Temporal server, sandbox). docs/benchmarks.md, "2.0 beside main".
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { createDatabase, type Database } from '../../../src/db/pool';
import { createIsolatedDatabase } from '../../devtools/testDatabases';
import { PROJECT_ROOT } from '../childProcess';
import { CommitCounter } from '../commitCounter';
import { unservedPackages, type LockEntry } from './servedPackages';

/** 2.0.0: the merge that cleared the slate (issue 23), tagged by commit, as docs/benchmarks.md names it. */
export const RELEASE_20_COMMIT = '1586d26';
const CACHE_DIRECTORY = path.join(PROJECT_ROOT, '.tmp', 'bench-release');
// Far above the product's order ids (dev/bench/environment.ts: below 8.001e12): the workflow id is the order
// id, and both variants start orders in the same namespace.
const ORDER_ID_OFFSET = 10_000_000_000_000;

const execFileAsync = promisify(execFile);

export interface ReleaseCheckout {
  directory: string;
  commit: string;
  /** 'shared': this checkout's node_modules serve it (linked); 'npm ci': it has its own. */
  dependencies: 'shared' | 'npm ci';
}

/** Extracts the release once (reused while the directory is there) and gives it its dependencies. */
export function prepareReleaseCheckout(log: (message: string) => void): ReleaseCheckout {
  const commit = execFileSync(
    'git',
    ['-C', PROJECT_ROOT, 'rev-parse', '--verify', `${RELEASE_20_COMMIT}^{commit}`],
    { encoding: 'utf8' },
  ).trim();
  const directory = path.join(CACHE_DIRECTORY, commit.slice(0, 12));
  const extracted = path.join(directory, '.bench-extracted');
  if (existsSync(extracted)) {
    log(`release-2.0: reusing ${path.relative(PROJECT_ROOT, directory)}`);
  } else {
    const began = performance.now();
    rmSync(directory, { recursive: true, force: true });
    mkdirSync(directory, { recursive: true });
    // git archive rather than a worktree: nothing is registered in the repository's shared git directory.
    const tar = `${directory}.tar`;
    execFileSync('git', ['-C', PROJECT_ROOT, 'archive', '--format=tar', '-o', tar, commit]);
    execFileSync('tar', ['-xf', tar, '-C', directory]);
    rmSync(tar);
    writeFileSync(extracted, `${commit}\n`);
    log(`release-2.0: extracted ${commit.slice(0, 7)} in ${msSince(began)} ms`);
  }
  return { directory, commit, dependencies: provideDependencies(directory, log) };
}

/**
 * Links this checkout's node_modules when it has every run-time package of the release's lockfile in the
 * same version (checked each run: ours may change); else `npm ci` in the release's directory, kept there.
 */
function provideDependencies(directory: string, log: (message: string) => void): 'shared' | 'npm ci' {
  const target = path.join(directory, 'node_modules');
  const ownInstall = path.join(directory, '.bench-npm-ci');
  if (existsSync(ownInstall)) return 'npm ci';
  const ours = realpathSync(path.join(PROJECT_ROOT, 'node_modules'));
  const lock = JSON.parse(readFileSync(path.join(directory, 'package-lock.json'), 'utf8')) as {
    packages?: Record<string, LockEntry>;
  };
  const unserved = unservedPackages(lock, (lockPath) => versionAt(path.join(path.dirname(ours), lockPath)));
  const linked = isSymlink(target);
  // A directory without the marker is an npm ci that did not finish.
  if (!linked && existsSync(target)) rmSync(target, { recursive: true, force: true });
  if (unserved.length === 0) {
    if (!linked) symlinkSync(ours, target, 'dir');
    return 'shared';
  }
  log(
    `release-2.0: this checkout's node_modules lack ${unserved.length} of its packages ` +
      `(${unserved.slice(0, 3).join(', ')}): npm ci in ${path.relative(PROJECT_ROOT, directory)}`,
  );
  if (linked) rmSync(target);
  const began = performance.now();
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: directory,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    timeout: 900_000,
  });
  if (result.status !== 0) {
    throw new Error(`release-2.0: npm ci failed (${result.status}):\n${(result.stderr ?? '').slice(-3000)}`);
  }
  writeFileSync(ownInstall, `${new Date().toISOString()}\n`);
  log(`release-2.0: npm ci took ${msSince(began)} ms`);
  return 'npm ci';
}

export interface ReleaseDatabase {
  /** The harness's pool on it: order inserts, verification (never in a measured path). */
  db: Database;
  /** What 2.0's worker connects with. */
  workerUrl: string;
  commits: CommitCounter;
  close(): Promise<void>;
}

/**
 * A database of its own on the bench's Postgres, with 2.0's roles and migrations run by 2.0's own CLIs: its
 * worker a worker login of least privilege where the product's is one (the embedded Postgres), else the
 * bench's login as given, as for the product (dev/bench/environment.ts).
 */
export async function prepareReleaseDatabase(
  checkout: ReleaseCheckout,
  adminUrl: string,
  productionLogins: boolean,
  log: (message: string) => void,
): Promise<ReleaseDatabase> {
  const began = performance.now();
  const isolated = await createIsolatedDatabase(adminUrl, 'order_mail_bench_release20');
  try {
    const runCli = async (script: string, env: Record<string, string>): Promise<void> => {
      try {
        await execFileAsync(process.execPath, ['--import', 'tsx', script], {
          cwd: checkout.directory,
          // WEBHOOK_DATABASE_URL empty: 2.0's db:roles then makes no webhook login.
          env: { ...process.env, WEBHOOK_DATABASE_URL: '', ...env },
          timeout: 300_000,
          maxBuffer: 16 * 1024 * 1024,
        });
      } catch (error) {
        const output = error as { stdout?: string; stderr?: string };
        throw new Error(
          `release-2.0: ${script} failed: ${`${output.stdout ?? ''}${output.stderr ?? ''}`.slice(-3000)}`,
          { cause: error },
        );
      }
    };
    let workerUrl = isolated.connectionString;
    if (productionLogins) {
      const migrationUrl = loginUrl(isolated.connectionString, 'order_mail_bench20_migrator');
      workerUrl = loginUrl(isolated.connectionString, 'order_mail_bench20_worker');
      await runCli('src/cli/db-roles.ts', {
        ADMIN_DATABASE_URL: isolated.connectionString,
        MIGRATION_DATABASE_URL: migrationUrl,
        DATABASE_URL: workerUrl,
      });
      await runCli('src/cli/migrate.ts', { MIGRATION_DATABASE_URL: migrationUrl });
    } else {
      await runCli('src/cli/migrate.ts', { MIGRATION_DATABASE_URL: isolated.connectionString });
    }
    const db = createDatabase({
      connectionString: isolated.connectionString,
      applicationName: 'order-mail-bench harness (release-2.0)',
      maxConnections: 4,
    });
    const offset = ORDER_ID_OFFSET + Math.floor(Math.random() * 8_000_000_000) * 1_000;
    await db.query(`SELECT setval(pg_get_serial_sequence('orders', 'id'), $1)`, [offset]);
    log(`release-2.0: its database made and migrated by 2.0's own CLIs in ${msSince(began)} ms`);
    return {
      db,
      workerUrl,
      commits: new CommitCounter(adminUrl, [new URL(isolated.connectionString).pathname.slice(1)]),
      async close() {
        await db.close().catch(() => undefined);
        await isolated.drop();
      },
    };
  } catch (error) {
    await isolated.drop().catch(() => undefined);
    throw error;
  }
}

function loginUrl(databaseUrl: string, user: string): string {
  const url = new URL(databaseUrl);
  url.username = user;
  url.password = randomBytes(16).toString('hex');
  return url.toString();
}

function versionAt(packageDirectory: string): string | null {
  try {
    const manifest = JSON.parse(readFileSync(path.join(packageDirectory, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return manifest.version ?? null;
  } catch {
    return null;
  }
}

function isSymlink(file: string): boolean {
  try {
    return lstatSync(file).isSymbolicLink();
  } catch {
    return false;
  }
}

function msSince(began: number): string {
  return (performance.now() - began).toFixed(0);
}
