// The two client packages as an order service gets them: packed (npm pack; a wheel), installed into fresh
// consumers (TypeScript strict as an ES module, plain CommonJS, a Python venv), and each starting an order's
// mail against the run's Temporal server, which a worker then sends: one mail per order, and a second start
// reads "already-started". The consumers see nothing of this repository but the package.
import { execFile } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { pythonPeersInterpreter } from '../../dev/peers/pythonPeers';
import { startMailSandbox, type MailSandbox } from '../../packages/sandbox/src/mailSandbox';
import { readMailLog } from '../../src/db/orderMailLog';
import { DEFAULT_TASK_QUEUE, ORDER_MAIL_WORKFLOW_TYPE } from '../../src/shared/workflowContract';
import { scratchDirectory } from '../support/scratch';
import {
  connectTestClient,
  createOrder,
  openTestDatabase,
  startTestWorker,
  testMailClient,
  testSettings,
  waitFor,
  type RunningTestWorker,
  type TestDatabase,
} from '../support/testKit';

const run = promisify(execFile);
const PROJECT_ROOT = path.join(__dirname, '..', '..');
const PYTHON_PACKAGE = path.join(PROJECT_ROOT, 'packages', 'client-python');
// Installs come from the npm and pip caches when warm; a cold one on a loaded 2-core machine takes minutes.
const INSTALL_TIMEOUT_MS = 300_000;

let work: string;
let tarball: string;
let wheel: string;
let database: TestDatabase;
let sandbox: MailSandbox;
let worker: RunningTestWorker;

let buildPython: string;

/** The client package, built and packed as a release packs it. */
async function packClient(): Promise<void> {
  await run('npm', ['run', '--silent', 'build:client'], { cwd: PROJECT_ROOT });
  const { stdout } = await run(
    'npm',
    ['pack', '--silent', '--workspace', '@order-confirmation-mail/client', '--pack-destination', work],
    { cwd: PROJECT_ROOT },
  );
  tarball = path.join(work, stdout.trim().split('\n').at(-1)!);
}

/**
 * The Python package's wheel, built by the pip of the Python peers' venv (`bash scripts/setup.sh --python`,
 * which `npm test` runs first), which the consumers' installs use too: a venv made here only for its pip cost
 * about 4 CPU s of ensurepip. pip builds the wheel in an isolated environment of its own all the same.
 */
async function buildWheel(): Promise<void> {
  buildPython = pythonPeersInterpreter();
  // Built from a copy: setuptools leaves build/ and egg-info beside the sources it builds.
  const pythonSource = path.join(work, 'client-python');
  await cp(PYTHON_PACKAGE, pythonSource, { recursive: true });
  const wheels = path.join(work, 'wheels');
  await run(
    buildPython,
    ['-m', 'pip', 'wheel', '--quiet', '--disable-pip-version-check', '--no-deps', pythonSource, '-w', wheels],
    { timeout: INSTALL_TIMEOUT_MS },
  );
  wheel = path.join(
    wheels,
    (await readdir(wheels)).find((file) => file.endsWith('.whl'))!,
  );
}

async function startWorker(): Promise<void> {
  database = await openTestDatabase('client_packages');
  sandbox = await startMailSandbox();
  worker = await startTestWorker({
    db: database.db,
    mail: testMailClient(sandbox.url),
    settings: testSettings(),
  });
}

beforeAll(async () => {
  work = await scratchDirectory('client-packages-');
  // Side by side: the npm build, the wheel's build and the worker need nothing of each other.
  await Promise.all([packClient(), buildWheel(), startWorker()]);
}, INSTALL_TIMEOUT_MS + 60_000);

afterAll(async () => {
  await worker?.stop();
  await sandbox?.close();
  await database?.close();
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

/** What a consumer's process needs to find the workers: the contract's variables, nothing of ours. */
function consumerEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_NAMESPACE: inject('temporalNamespace'),
    TEMPORAL_TASK_QUEUE: worker.taskQueue,
  };
}

/** The consumer's start, twice for one order: started, then already-started; the worker sends one mail. */
async function startsOneMail(start: (orderId: string) => Promise<string>): Promise<void> {
  const orderId = await createOrder(database.db);
  const first = JSON.parse(await start(orderId)) as { status: string };
  expect(first.status).toBe('started');
  const second = JSON.parse(await start(orderId)) as { status: string };
  expect(second.status).toBe('already-started');
  await waitFor('the order to be sent', async () =>
    (await readMailLog(database.db, orderId))?.state === 'sent' ? true : undefined,
  );
  expect(sandbox.messagesFor(orderId)).toHaveLength(1);
  const client = await connectTestClient();
  try {
    const description = await client.workflow.getHandle(orderId).describe();
    expect(description.type).toBe(ORDER_MAIL_WORKFLOW_TYPE);
    expect(description.taskQueue).toBe(worker.taskQueue);
  } finally {
    await client.connection.close();
  }
}

async function npmConsumer(name: string, packageJson: object, extra: string[] = []): Promise<string> {
  const directory = path.join(work, name);
  await mkdir(directory);
  await writeFile(path.join(directory, 'package.json'), JSON.stringify(packageJson, null, 2));
  await run(
    'npm',
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball, ...extra],
    { cwd: directory, timeout: INSTALL_TIMEOUT_MS },
  );
  return directory;
}

async function directorySizeMb(directory: string): Promise<number> {
  const { stdout } = await run('du', ['-sk', directory]);
  return Number(stdout.split('\t')[0]) / 1024;
}

interface ClientManifest {
  version: string;
  dependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  publishConfig: { registry: string };
}

async function clientManifest(): Promise<ClientManifest> {
  return JSON.parse(
    await readFile(path.join(PROJECT_ROOT, 'packages', 'client', 'package.json'), 'utf8'),
  ) as ClientManifest;
}

/** The lowest Temporal version the client's peer range admits (`>=X <2`). */
async function lowestPeerVersion(): Promise<string> {
  const range = (await clientManifest()).peerDependencies['@temporalio/client'] ?? '';
  const lowest = /^>=(\d+\.\d+\.\d+) <2$/.exec(range)?.[1];
  if (lowest === undefined) throw new Error(`unexpected peer range ${JSON.stringify(range)}`);
  return lowest;
}

/**
 * Each installed copy of the named packages in a consumer, as one `npm ls` finds them: name@version per path,
 * by name.
 */
async function installedCopies(directory: string, ...names: string[]): Promise<Record<string, string[]>> {
  const { stdout } = await run('npm', ['ls', ...names, '--all', '--parseable', '--long'], { cwd: directory });
  const lines = [...new Set(stdout.trim().split('\n'))];
  return Object.fromEntries(
    names.map((name) => [
      name,
      lines
        .filter((line) => line.includes(`:${name}@`))
        .map((line) => line.split(':')[1]!)
        .sort(),
    ]),
  );
}

/**
 * An order service on a given Temporal release (its own @temporalio/client, common and envconfig at one
 * version) installs the client: one copy of Temporal's client and common, and its own Client passes in
 * (TS2345 when the package brought a second copy), strict with skipLibCheck as services compile.
 */
async function serviceOnTemporal(name: string, temporal: string): Promise<string> {
  const directory = await npmConsumer(
    name,
    {
      name: `${name}-shop`,
      private: true,
      type: 'module',
      dependencies: {
        '@temporalio/client': temporal,
        '@temporalio/common': temporal,
        '@temporalio/envconfig': temporal,
      },
    },
    ['@types/node@24.19.4'],
  );
  await writeFile(
    path.join(directory, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noUncheckedIndexedAccess: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        outDir: 'out',
        types: ['node'],
        skipLibCheck: true,
      },
      files: ['start.ts'],
    }),
  );
  await writeFile(
    path.join(directory, 'start.ts'),
    [
      "import { Client, Connection } from '@temporalio/client';",
      "import { connectOrderMailClient, startOrderConfirmationMail, type StartResult } from '@order-confirmation-mail/client';",
      "// The service's own Client, and ours is one of its Clients.",
      'const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });',
      'const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE! });',
      'const ours: Client = await connectOrderMailClient();',
      'await ours.connection.close();',
      'try {',
      '  const result: StartResult = await startOrderConfirmationMail(client, process.argv[2]);',
      '  console.log(JSON.stringify(result));',
      '} finally {',
      '  await connection.close();',
      '}',
    ].join('\n'),
  );
  const tsc = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', directory]).catch((error: Error & { stdout?: string }) => {
    throw new Error(`the consumer does not type-check:\n${error.stdout ?? error.message}`, { cause: error });
  });
  return directory;
}

// The consumers install side by side, each into a directory of its own, from the same packed tarball and wheel;
// the installs mostly wait on the caches and the network.
describe.concurrent('@order-confirmation-mail/client (npm)', () => {
  it('packs its built code alone: the ES module, the CommonJS file, their types', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n').sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'package/package.json',
        'package/dist/index.mjs',
        'package/dist/index.cjs',
        'package/dist/index.d.ts',
        'package/dist/index.d.mts',
      ]),
    );
    expect(files.filter((file) => !/^package\/(dist\/|package\.json$|README\.md$)/.test(file))).toEqual([]);
    const manifest = await clientManifest();
    const root = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
      dependencies: Record<string, string>;
    };
    // Versioned with the worker; Temporal's packages are the order service's own (peers, over a range), and
    // the repository builds and tests the client on the worker's SDK.
    expect(manifest.version).toBe(root.version);
    expect(manifest.dependencies ?? {}).toEqual({});
    for (const [name, version] of Object.entries(manifest.devDependencies)) {
      expect({ name, version }).toEqual({ name, version: root.dependencies[name] });
    }
    expect(Object.keys(manifest.peerDependencies).sort()).toEqual(
      Object.keys(manifest.devDependencies).sort(),
    );
    const lowestPeer = await lowestPeerVersion();
    for (const range of Object.values(manifest.peerDependencies)) expect(range).toBe(`>=${lowestPeer} <2`);
    // Published only where scripts/release-clients.sh says (--registry "$NPM_REGISTRY"): a plain
    // `npm publish` goes to a name that never resolves, not to the public registry.
    expect(new URL(manifest.publishConfig.registry).hostname).toMatch(/\.invalid$/);
    const changelog = await readFile(path.join(PROJECT_ROOT, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toContain(`\n## ${root.version}\n`);
  });

  it(
    'a TypeScript consumer, strict, as an ES module, on the newest Temporal of the peer range (npm brings the peers): it type-checks, and starts an order once',
    async () => {
      const directory = await npmConsumer('ts-esm', { name: 'ts-esm-shop', private: true, type: 'module' }, [
        '@types/node@24.19.4',
        '@types/ms@2.1.0',
      ]);
      await writeFile(
        path.join(directory, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noUncheckedIndexedAccess: true,
            module: 'nodenext',
            moduleResolution: 'nodenext',
            target: 'es2022',
            outDir: 'out',
            types: ['node'],
            // Every declaration is checked, the package's included (an unresolved one would otherwise turn
            // its names into any). The SDK's own import 'ms', which ships no types: @types/ms below.
            skipLibCheck: false,
            // Except TypeScript's own lib files (lib.dom.d.ts alone was a third of the check's CPU).
            skipDefaultLibCheck: true,
          },
          files: ['start.ts'],
        }),
      );
      await writeFile(
        path.join(directory, 'start.ts'),
        [
          'import {',
          '  connectOrderMailClient, DEFAULT_TASK_QUEUE, InvalidOrderIdError, ORDER_MAIL_WORKFLOW_TYPE,',
          '  parseOrderId, startOrderConfirmationMail, type StartResult,',
          "} from '@order-confirmation-mail/client';",
          'const names: readonly string[] = [DEFAULT_TASK_QUEUE, ORDER_MAIL_WORKFLOW_TYPE];',
          "try { parseOrderId('0123'); } catch (error) { if (!(error instanceof InvalidOrderIdError)) throw error; }",
          'if (names.length !== 2) throw new Error(names.join());',
          'const client = await connectOrderMailClient();',
          'try {',
          '  const result: StartResult = await startOrderConfirmationMail(client, process.argv[2]);',
          '  console.log(JSON.stringify(result));',
          '} finally {',
          '  await client.connection.close();',
          '}',
        ].join('\n'),
      );
      const tsc = path.join(PROJECT_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
      await run(process.execPath, [tsc, '-p', directory]).catch((error: Error & { stdout?: string }) => {
        throw new Error(`the consumer does not type-check:\n${error.stdout ?? error.message}`, {
          cause: error,
        });
      });
      await startsOneMail(
        async (orderId) =>
          (await run(process.execPath, ['out/start.js', orderId], { cwd: directory, env: consumerEnv() }))
            .stdout,
      );

      // npm brought the peers at the newest release of the range: one copy of each.
      const copies = await installedCopies(directory, '@temporalio/client', '@temporalio/common');
      expect(copies['@temporalio/client']).toHaveLength(1);
      expect(copies['@temporalio/common']).toHaveLength(1);
      // What the order service takes on: the client and the Temporal SDK's client side, no worker.
      const installed = await readdir(path.join(directory, 'node_modules', '@temporalio'));
      expect(installed.sort()).not.toEqual(expect.arrayContaining(['worker']));
      expect(installed).not.toContain('workflow');
      expect(installed).not.toContain('core-bridge');
      const sizeMb = await directorySizeMb(path.join(directory, 'node_modules'));
      console.log(`client package: the TypeScript consumer's node_modules is ${sizeMb.toFixed(1)} MB`);
      // 266 MB when the worker's whole package was the only thing to install (issue 24).
      expect(sizeMb).toBeLessThan(60);
    },
    INSTALL_TIMEOUT_MS,
  );

  it(
    'an order service on the previous Temporal minor (1.23): one copy of the SDK, and its own Client passes in',
    async () => {
      const directory = await serviceOnTemporal('previous-minor', '~1.23.0');
      const copies = await installedCopies(directory, '@temporalio/client', '@temporalio/common');
      expect(copies['@temporalio/client']).toEqual([
        expect.stringMatching(/^@temporalio\/client@1\.23\.\d+$/),
      ]);
      expect(copies['@temporalio/common']).toEqual([
        expect.stringMatching(/^@temporalio\/common@1\.23\.\d+$/),
      ]);
      await startsOneMail(
        async (orderId) =>
          (await run(process.execPath, ['out/start.js', orderId], { cwd: directory, env: consumerEnv() }))
            .stdout,
      );
    },
    INSTALL_TIMEOUT_MS,
  );

  it(
    'an order service on the lowest Temporal release the peer range admits: it type-checks and starts once',
    async () => {
      const lowestPeer = await lowestPeerVersion();
      const directory = await serviceOnTemporal('lowest-peer', lowestPeer);
      expect((await installedCopies(directory, '@temporalio/client'))['@temporalio/client']).toEqual([
        `@temporalio/client@${lowestPeer}`,
      ]);
      await startsOneMail(
        async (orderId) =>
          (await run(process.execPath, ['out/start.js', orderId], { cwd: directory, env: consumerEnv() }))
            .stdout,
      );
    },
    INSTALL_TIMEOUT_MS,
  );

  it(
    'a plain CommonJS consumer: require() it and start an order once',
    async () => {
      const directory = await npmConsumer('cjs', { name: 'cjs-shop', private: true });
      await writeFile(
        path.join(directory, 'start.js'),
        [
          "const { connectOrderMailClient, startOrderConfirmationMail } = require('@order-confirmation-mail/client');",
          'connectOrderMailClient().then(async (client) => {',
          '  try {',
          '    console.log(JSON.stringify(await startOrderConfirmationMail(client, process.argv[2])));',
          '  } finally {',
          '    await client.connection.close();',
          '  }',
          '});',
        ].join('\n'),
      );
      await startsOneMail(
        async (orderId) =>
          (await run(process.execPath, ['start.js', orderId], { cwd: directory, env: consumerEnv() })).stdout,
      );
    },
    INSTALL_TIMEOUT_MS,
  );
});

describe.concurrent('order-confirmation-mail-client (Python)', () => {
  it('names the same contract as the TypeScript client, at the worker version', async () => {
    const source = await readFile(
      path.join(PYTHON_PACKAGE, 'src', 'order_confirmation_mail_client', '__init__.py'),
      'utf8',
    );
    expect(/^WORKFLOW_TYPE = "([^"]+)"$/m.exec(source)?.[1]).toBe(ORDER_MAIL_WORKFLOW_TYPE);
    expect(/^DEFAULT_TASK_QUEUE = "([^"]+)"$/m.exec(source)?.[1]).toBe(DEFAULT_TASK_QUEUE);
    const pyproject = await readFile(path.join(PYTHON_PACKAGE, 'pyproject.toml'), 'utf8');
    const root = JSON.parse(await readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(/^version = "([^"]+)"$/m.exec(pyproject)?.[1]).toBe(root.version);
    expect(path.basename(wheel)).toBe(`order_confirmation_mail_client-${root.version}-py3-none-any.whl`);
    // The licence as an SPDX expression with its file (PEP 639): the table form stops building in 2027.
    const { stdout: metadata } = await run('python3', [
      '-c',
      'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]).decode())',
      wheel,
      `order_confirmation_mail_client-${root.version}.dist-info/METADATA`,
    ]);
    expect(metadata).toMatch(/^License-Expression: LicenseRef-Proprietary$/m);
    expect(metadata).toMatch(/^License-File: LICENSE$/m);
  });

  // The lowest temporalio of the package's range and the newest pip finds (the same release while the range's
  // floor is the newest one).
  it.each(['lowest', 'newest'] as const)(
    'a fresh venv installs the wheel with the %s temporalio of its range and starts an order once',
    async (bound) => {
      const venv = path.join(work, `python-shop-${bound}`);
      // Without a pip of its own (seeding one is most of a venv's creation); the peers' venv's pip installs
      // into it (--python), as its own would.
      await run('python3', ['-m', 'venv', '--without-pip', venv]);
      const python = path.join(venv, 'bin', 'python');
      const pyproject = await readFile(path.join(PYTHON_PACKAGE, 'pyproject.toml'), 'utf8');
      const floor = /"temporalio>=([\d.]+),<2"/.exec(pyproject)?.[1];
      expect(floor).toBeDefined();
      const pin = bound === 'lowest' ? [`temporalio==${floor}`] : [];
      // --no-compile: no .pyc for the hundreds of modules the start never imports (its own first run writes them).
      const install = ['install', '--quiet', '--no-compile', '--disable-pip-version-check', wheel, ...pin];
      await run(buildPython, ['-m', 'pip', '--python', python, ...install], { timeout: INSTALL_TIMEOUT_MS });
      const { stdout: installed } = await run(python, [
        '-c',
        'import importlib.metadata as m; print(m.version("temporalio"))',
      ]);
      const release = (version: string) => version.trim().replace(/(\.0)+$/, '');
      if (bound === 'lowest') expect(release(installed)).toBe(release(floor!));
      console.log(`client package: Python consumer (${bound}) on temporalio ${installed.trim()}`);
      const script = path.join(work, `start-${bound}.py`);
      await writeFile(
        script,
        [
          'import asyncio, dataclasses, json, os, sys',
          'from order_confirmation_mail_client import connect_order_mail_client, start_order_confirmation_mail',
          'async def main():',
          '    client = await connect_order_mail_client()',
          '    result = await start_order_confirmation_mail(client, sys.argv[1])',
          '    print(json.dumps(dataclasses.asdict(result)), flush=True)',
          'asyncio.run(main())',
          // The SDK's Rust threads can abort the interpreter's teardown (sdk-python #300): leave without it.
          'os._exit(0)',
        ].join('\n'),
      );
      await startsOneMail(
        async (orderId) => (await run(python, [script, orderId], { env: consumerEnv() })).stdout,
      );
    },
    INSTALL_TIMEOUT_MS,
  );
});
